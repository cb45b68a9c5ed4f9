package setting

import (
	"errors"
	"math"
	"strconv"
	"strings"
)

// Adapters receive their block of the file raw (persistence.Options.Raw): values are
// what YAML decoding gave (bool, int, float64, string) or, when set from the
// environment, strings. These read such values the same way for every adapter.

// errNotWhole is WholeNumber's error.
var errNotWhole = errors.New("not a whole non-negative number")

// WholeNumber reads a raw option value as a non-negative whole number: any Go integer
// type, a float64 without a fraction, or a decimal string (as the environment gives it).
func WholeNumber(raw any) (int64, error) {
	var n int64
	ok := false
	switch v := raw.(type) {
	case int:
		n, ok = int64(v), true
	case int8:
		n, ok = int64(v), true
	case int16:
		n, ok = int64(v), true
	case int32:
		n, ok = int64(v), true
	case int64:
		n, ok = v, true
	case uint:
		n, ok = int64(v), uint64(v) <= math.MaxInt64
	case uint8:
		n, ok = int64(v), true
	case uint16:
		n, ok = int64(v), true
	case uint32:
		n, ok = int64(v), true
	case uint64:
		n, ok = int64(v), v <= math.MaxInt64
	case float32:
		return WholeNumber(float64(v))
	case float64:
		n, ok = int64(v), v == math.Trunc(v) && v >= 0 && v < math.MaxInt64
	case string:
		p, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		n, ok = p, err == nil
	}
	if !ok || n < 0 {
		return 0, errNotWhole
	}
	return n, nil
}

// Bool reads a raw option value as a boolean: a YAML bool or its spelling in a string.
func Bool(raw any) (v, ok bool) {
	switch b := raw.(type) {
	case bool:
		return b, true
	case string:
		v, err := strconv.ParseBool(strings.TrimSpace(b))
		return v, err == nil
	}
	return false, false
}
