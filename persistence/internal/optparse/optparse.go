// Package optparse reads an adapter's block of the broker configuration
// (persistence.Options.Raw) through a table of keys: keys matched case-insensitively in
// a stable order, scalar values only, and the value readers the adapters share (sizes,
// durations). How an error looks is the adapter's: it gets the key, the value, the
// problem and what is allowed, and builds its own error.
package optparse

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/activemq-go/broker/internal/setting"
)

// Key is one key of an adapter's block.
type Key[T any] struct {
	Name    string // as documented (the YAML spelling)
	Allowed string // what the key takes, for error messages
	// Set stores raw (a string, bool or number) into o; it returns "" or the problem.
	Set func(o *T, raw any) (problem string)
}

// FailFunc builds the error for key (as documented; as written for an unknown key),
// its value as text ("" for an unknown key), the problem and what is allowed.
type FailFunc func(key, val, problem, allowed string) error

// Apply sets o from raw through keys. Keys are taken in sorted order (so the same
// error is reported every time); the first unknown key ("unknown option", allowed:
// the key names) or bad value (not a scalar, or Set's problem) stops it with fail's
// error.
func Apply[T any](o *T, raw map[string]any, keys []Key[T], fail FailFunc) error {
	names := make([]string, 0, len(raw))
	for k := range raw {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		v := raw[k]
		i := slices.IndexFunc(keys, func(key Key[T]) bool { return strings.EqualFold(key.Name, k) })
		if i < 0 {
			all := make([]string, len(keys))
			for j, key := range keys {
				all[j] = key.Name
			}
			return fail(k, "", "unknown option", strings.Join(all, ", "))
		}
		key := keys[i]
		var problem string
		switch v.(type) {
		case string, bool, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, float32, float64:
			problem = key.Set(o, v)
		default:
			problem = fmt.Sprintf("must be a string, a number or a boolean, not %T", v)
		}
		if problem != "" {
			return fail(key.Name, fmt.Sprint(v), problem, key.Allowed)
		}
	}
	return nil
}

// Size reads a size given as a string ("32mb") or a whole number of bytes.
func Size(raw any) (int64, error) {
	if s, ok := raw.(string); ok {
		return setting.ParseSize(s)
	}
	return setting.WholeNumber(raw)
}

// SizeKey is a key read by Size into the field of o that field returns: a size from lo
// to hi bytes, else problem.
func SizeKey[T any](name, allowed string, lo, hi int64, problem string, field func(o *T) *int64) Key[T] {
	return Key[T]{Name: name, Allowed: allowed, Set: func(o *T, raw any) string {
		n, err := Size(raw)
		if err != nil || n < lo || n > hi {
			return problem
		}
		*field(o) = n
		return ""
	}}
}

// MaxDuration is the longest duration Duration accepts.
const MaxDuration = 24 * time.Hour

// Duration reads a positive duration of at most MaxDuration given as a string ("5s")
// or a whole number of milliseconds. It returns "" or the problem.
func Duration(raw any) (time.Duration, string) {
	var d time.Duration
	if s, ok := raw.(string); ok {
		var err error
		if d, err = setting.ParseDuration(s); err != nil {
			return 0, "not a duration"
		}
	} else {
		ms, err := setting.WholeNumber(raw)
		if err != nil || ms > int64(MaxDuration/time.Millisecond) {
			return 0, "not a valid duration"
		}
		d = time.Duration(ms) * time.Millisecond
	}
	if d <= 0 || d > MaxDuration {
		return 0, "duration out of range"
	}
	return d, ""
}

// DurationAllowed is what a duration key takes (Duration), for its Allowed.
const DurationAllowed = `a positive duration such as "5s" or "500ms" (a number is milliseconds), at most 24h`

// DurationKey is a key read by Duration into the field of o that field returns. Its
// problem is Duration's, or problem for any of them if problem is not "".
func DurationKey[T any](name string, field func(o *T) *time.Duration, problem string) Key[T] {
	return Key[T]{Name: name, Allowed: DurationAllowed, Set: func(o *T, raw any) string {
		d, p := Duration(raw)
		if p != "" {
			if problem != "" {
				return problem
			}
			return p
		}
		*field(o) = d
		return ""
	}}
}

// DirectoryKey is the "directory" key: a non-blank path, cleaned, into the field of o
// that field returns; allowed names the default.
func DirectoryKey[T any](allowed string, field func(o *T) *string) Key[T] {
	return Key[T]{Name: "directory", Allowed: allowed, Set: func(o *T, raw any) string {
		s, ok := raw.(string)
		if !ok || strings.TrimSpace(s) == "" {
			return "not a directory path"
		}
		*field(o) = filepath.Clean(s)
		return ""
	}}
}

// StoreBeforeDispatchKey is ActiveMQ's "concurrentStoreAndDispatchQueues" (a boolean,
// true by default) stored, negated, into the StoreBeforeDispatch field of o that field
// returns.
func StoreBeforeDispatchKey[T any](field func(o *T) *bool) Key[T] {
	return Key[T]{Name: "concurrentStoreAndDispatchQueues", Allowed: "true or false", Set: func(o *T, raw any) string {
		b, ok := setting.Bool(raw)
		if !ok {
			return "not a boolean"
		}
		*field(o) = !b
		return ""
	}}
}

// SettingError returns the FailFunc of an adapter whose block is at keyPath: a
// *setting.Error naming the key under keyPath, the value and what is allowed, wrapping
// sentinel.
func SettingError(keyPath string, sentinel error) FailFunc {
	return func(key, val, problem, allowed string) error {
		return &setting.Error{Key: keyPath + "." + key, Value: val, Problem: problem, Allowed: allowed, Err: sentinel}
	}
}
