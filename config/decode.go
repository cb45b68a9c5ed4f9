package config

import (
	"errors"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/go-viper/mapstructure/v2"

	"github.com/activemq-go/broker/destinations/policy"
	"github.com/activemq-go/broker/internal/setting"
)

// decode fills f from the checked settings tree. Unused keys are an error (the
// checker has already named them better; this is the backstop), and scalars are
// converted by scalarHook, which accepts the strings that environment variables
// and placeholders produce.
func (c *checker) decode(tree map[string]any, f *file) *Error {
	d, err := mapstructure.NewDecoder(&mapstructure.DecoderConfig{
		Result:      f,
		ErrorUnused: true,
		DecodeHook:  scalarHook,
	})
	if err != nil {
		return &Error{Problem: "internal: " + err.Error()}
	}
	if err := d.Decode(tree); err != nil {
		return c.from.annotate(decodeError(err))
	}
	return nil
}

// decodeError turns the first failure in mapstructure's error tree into an
// *Error keyed by the failing field's path.
func decodeError(err error) *Error {
	name, cause := firstDecodeFailure(err)
	var ce *Error
	if errors.As(cause, &ce) {
		return newError(name, ce.Value, ce.Problem, ce.Allowed)
	}
	if cause == nil {
		cause = err
	}
	return newError(name, "", cause.Error(), "")
}

// firstDecodeFailure finds the innermost mapstructure.DecodeError, depth first,
// and returns its field path and cause.
func firstDecodeFailure(err error) (string, error) {
	var de *mapstructure.DecodeError
	if errors.As(err, &de) {
		inner := de.Unwrap()
		if name, cause := firstDecodeFailure(inner); name != "" {
			return name, cause
		}
		return de.Name(), inner
	}
	return "", nil
}

var (
	durationType = reflect.TypeOf(time.Duration(0))
	sizeType     = reflect.TypeOf(byteSize(0))
	bytesType    = reflect.TypeOf(policy.Bytes(0))
	namesType    = reflect.TypeOf(nameList{})
)

// byteSize is a size in bytes as written in the file: a plain number of bytes or
// what setting.ParseSize reads ("64mb"). Sections with sizes decode into their own
// struct using it, since an int64 field alone cannot say whether "1kb" is
// allowed; their public types have plain int64 fields. policy.Bytes is read the
// same way.
type byteSize int64

// scalarHook converts a scalar to the field's type: strings to booleans and
// numbers (as environment variables give them), numbers to strings (a broker
// name written as 1234), integers or setting.ParseDuration strings to time.Duration,
// non-negative integers or setting.ParseSize strings to byteSize, a string or a
// list to a nameList (see names). Anything it cannot convert is an *Error naming
// what is allowed.
func scalarHook(_ reflect.Type, to reflect.Type, data any) (any, error) {
	if data == nil {
		return nil, nil
	}
	if to == namesType {
		return names(data), nil
	}
	switch data.(type) {
	case map[string]any, []any:
		if to.Kind() == reflect.Struct || to.Kind() == reflect.Map || to.Kind() == reflect.Slice || to.Kind() == reflect.Interface {
			return data, nil
		}
		return nil, &Error{Problem: "must be a single value, not " + describe(data)}
	}
	s, isString := data.(string)
	switch {
	case to == sizeType || to == bytesType:
		return sizeValue(data)
	case to == durationType:
		switch x := data.(type) {
		case time.Duration: // a default
			return x, nil
		case int:
			return time.Duration(x) * time.Millisecond, nil
		case string:
			d, err := setting.ParseDuration(x)
			if err != nil {
				return nil, err
			}
			return d, nil
		}
		return nil, &Error{Value: scalarString(data), Problem: "not a duration", Allowed: setting.DurationAllowed}
	case to.Kind() == reflect.String:
		if isString {
			return s, nil
		}
		return scalarString(data), nil
	case to.Kind() == reflect.Bool:
		if isString {
			b, err := strconv.ParseBool(strings.TrimSpace(s))
			if err != nil {
				return nil, &Error{Value: s, Problem: "not a boolean", Allowed: "true, false"}
			}
			return b, nil
		}
		if _, ok := data.(bool); !ok {
			return nil, &Error{Value: scalarString(data), Problem: "not a boolean", Allowed: "true, false"}
		}
	case to.Kind() >= reflect.Int && to.Kind() <= reflect.Int64:
		switch x := data.(type) {
		case string:
			n, err := strconv.ParseInt(strings.TrimSpace(x), 10, 64)
			if err != nil {
				return nil, &Error{Value: x, Problem: "not an integer", Allowed: "a whole number"}
			}
			return n, nil
		case float64:
			if x != math.Trunc(x) {
				return nil, &Error{Value: scalarString(x), Problem: "not an integer", Allowed: "a whole number"}
			}
		case bool:
			return nil, &Error{Value: scalarString(x), Problem: "not an integer", Allowed: "a whole number"}
		}
	case to.Kind() == reflect.Float64 || to.Kind() == reflect.Float32:
		switch x := data.(type) {
		case string:
			f, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
			if err != nil {
				return nil, &Error{Value: x, Problem: "not a number", Allowed: "a decimal number"}
			}
			return f, nil
		case bool:
			return nil, &Error{Value: scalarString(x), Problem: "not a number", Allowed: "a decimal number"}
		}
	}
	return data, nil
}

// sizeValue converts a scalar to a byte count for a byteSize field.
func sizeValue(data any) (any, error) {
	var n int64
	switch x := data.(type) {
	case string:
		return setting.ParseSize(x)
	case int:
		n = int64(x)
	case int64:
		n = x
	case uint64:
		if x > math.MaxInt64 {
			return nil, &Error{Value: scalarString(x), Problem: "size out of range", Allowed: setting.SizeAllowed}
		}
		n = int64(x)
	default:
		return nil, &Error{Value: scalarString(data), Problem: "not a size", Allowed: setting.SizeAllowed}
	}
	if n < 0 {
		return nil, &Error{Value: scalarString(data), Problem: "a size must not be negative", Allowed: setting.SizeAllowed}
	}
	return n, nil
}
