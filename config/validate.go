package config

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/activemq-go/broker/internal/setting"
)

// Range checks of build. Each takes the key's canonical path
// ("destinationPolicy[2].redeliveryPolicy.backOffMultiplier") and reports the
// key as the file spelled it, with the value as written, through invalid.

// invalid reports the value at path: the key as written in the file (or
// canonical, where the environment set it), the value as written, and where the
// environment set it, its variable.
func (c *checker) invalid(path, problem, allowed string) *Error {
	return c.errorf(c.written(path), c.raw(path), problem, allowed)
}

// pathSegment is one key ("brokerName") or list index of a path.
type pathSegment struct {
	key   string
	index int // when key == ""
}

// splitPath splits "a[2].b.c" into a, [2], b, c.
func splitPath(path string) []pathSegment {
	var segs []pathSegment
	for _, part := range strings.Split(path, ".") {
		key, rest, _ := strings.Cut(part, "[")
		if key != "" {
			segs = append(segs, pathSegment{key: key})
		}
		for rest != "" {
			n, after, _ := strings.Cut(rest, "]")
			i, _ := strconv.Atoi(n)
			segs = append(segs, pathSegment{index: i})
			rest = strings.TrimPrefix(after, "[")
		}
	}
	return segs
}

// written rewrites a canonical path with the file's spelling of each key.
func (c *checker) written(path string) string {
	var display, lower string
	for _, s := range splitPath(path) {
		if s.key == "" {
			display, lower = joinIndex(display, s.index), joinIndex(lower, s.index)
			continue
		}
		lk := strings.ToLower(s.key)
		lower = joinKey(lower, lk)
		key := s.key
		if w, ok := c.spell[lower]; ok {
			key = w
		}
		display = joinKey(display, key)
	}
	return display
}

// raw is the value at path in the settings tree as written (or as set from the
// environment), for error messages; "" for none or for a mapping or list.
func (c *checker) raw(path string) string {
	v, _ := c.lookup(path)
	return scalarString(v)
}

// lookup finds the value at path in the settings tree; ok is false when a key on
// the way is absent. A key written with no value is there, with the value nil.
func (c *checker) lookup(path string) (v any, ok bool) {
	v = c.tree
	for _, s := range splitPath(path) {
		switch x := v.(type) {
		case map[string]any:
			if s.key == "" {
				return nil, false
			}
			if v, ok = x[strings.ToLower(s.key)]; !ok {
				return nil, false
			}
		case []any:
			if s.key != "" || s.index >= len(x) {
				return nil, false
			}
			v = x[s.index]
		default:
			return nil, false
		}
	}
	return v, true
}

// nonNegative checks a duration for which 0 means none or never.
func (c *checker) nonNegative(path string, d time.Duration, zero string) *Error {
	if d < 0 {
		return c.invalid(path, "must not be negative", "0 ("+zero+") or more: "+setting.DurationAllowed)
	}
	return nil
}

// positive checks a duration that must be more than 0.
func (c *checker) positive(path string, d time.Duration) *Error {
	if d <= 0 {
		return c.invalid(path, "must be more than 0", setting.DurationAllowed)
	}
	return nil
}

// noneOrPositive checks a duration for which ActiveMQ writes "none" as -1; 0
// means the same here. Both are returned as 0.
func (c *checker) noneOrPositive(path string, d time.Duration, none string) (time.Duration, *Error) {
	switch {
	case d == -time.Millisecond || d == 0:
		return 0, nil
	case d < 0:
		return 0, c.invalid(path, "must be -1, 0 or positive", "-1 or 0 ("+none+"), or "+setting.DurationAllowed)
	}
	return d, nil
}

// sizeAtLeast checks a size against its minimum.
func (c *checker) sizeAtLeast(path string, n, lo int64) *Error {
	if n < lo {
		return c.invalid(path, fmt.Sprintf("%d bytes is too small", n),
			fmt.Sprintf("a size of at least %d bytes: %s", lo, setting.SizeAllowed))
	}
	return nil
}

// intRange checks an integer.
func (c *checker) intRange(path string, n, lo, hi int64, note string) *Error {
	if n < lo || n > hi {
		allowed := fmt.Sprintf("an integer from %d to %d", lo, hi)
		if hi == math.MaxInt64 {
			allowed = fmt.Sprintf("an integer of at least %d", lo)
		}
		if note != "" {
			allowed += " (" + note + ")"
		}
		return c.invalid(path, fmt.Sprintf("%d is out of range", n), allowed)
	}
	return nil
}

// oneOf checks a value against a closed set of names, case-insensitively, and
// returns it in the set's spelling.
func (c *checker) oneOf(path, v string, names ...string) (string, *Error) {
	for _, n := range names {
		if strings.EqualFold(strings.TrimSpace(v), n) {
			return n, nil
		}
	}
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = n
		if n == "" {
			quoted[i] = `"" (none)`
		}
	}
	return "", c.invalid(path, "unknown value", strings.Join(quoted, ", "))
}
