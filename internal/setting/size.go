package setting

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// SizeAllowed describes what ParseSize accepts, for Error.Allowed.
const SizeAllowed = `a whole number of bytes, optionally followed by kb, mb, gb or tb ` +
	`(1024-based; "k", "kib" and any case also accepted), e.g. 10485760, "64mb", "1 GiB"`

// ParseSize parses a byte size as ActiveMQ writes them: a plain integer number of
// bytes ("10485760"), or an integer and a unit ("64mb", "64 mb", "32MB", "1 GiB",
// "512kb"). Units are k, m, g and t, each optionally followed by "i" and/or "b",
// in any case, optionally separated from the number by spaces; a lone "b" means
// bytes. Every unit is 1024-based, as in ActiveMQ ("1kb" is 1024 bytes), whether
// or not the "i" is written. Fractions, signs and negative sizes are refused.
//
// The error is a *Error with an empty Key; callers that know the key set it.
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	end := 0
	for end < len(t) && t[end] >= '0' && t[end] <= '9' {
		end++
	}
	if end == 0 {
		return 0, NewError("", s, "not a size", SizeAllowed)
	}
	n, err := strconv.ParseInt(t[:end], 10, 64)
	if err != nil {
		return 0, NewError("", s, "size out of range", SizeAllowed)
	}
	shift, ok := sizeUnit(strings.ToLower(strings.TrimSpace(t[end:])))
	if !ok {
		return 0, NewError("", s, "not a size", SizeAllowed)
	}
	if n > math.MaxInt64>>shift {
		return 0, NewError("", s, "size out of range", SizeAllowed)
	}
	return n << shift, nil
}

// sizeUnit returns the power of two a unit multiplies by.
func sizeUnit(u string) (shift uint, ok bool) {
	if u == "" || u == "b" {
		return 0, true
	}
	switch u[0] {
	case 'k':
		shift = 10
	case 'm':
		shift = 20
	case 'g':
		shift = 30
	case 't':
		shift = 40
	default:
		return 0, false
	}
	switch u[1:] {
	case "", "b", "i", "ib":
		return shift, true
	}
	return 0, false
}

// DurationAllowed describes what ParseDuration accepts, for Error.Allowed.
const DurationAllowed = `an integer number of milliseconds (ActiveMQ style, e.g. 30000) ` +
	`or a Go duration such as "30s", "1m30s", "500ms"`

// ParseDuration parses a duration as ActiveMQ users write them: a plain integer
// is a number of milliseconds ("30000"); anything else must be a Go duration
// ("30s", "1m30s", "250ms"). Negative values are returned as they are; callers
// check ranges.
//
// The error is a *Error with an empty Key; callers that know the key set it.
func ParseDuration(s string) (time.Duration, error) {
	t := strings.TrimSpace(s)
	if ms, err := strconv.ParseInt(t, 10, 64); err == nil {
		if ms > math.MaxInt64/int64(time.Millisecond) || ms < math.MinInt64/int64(time.Millisecond) {
			return 0, NewError("", s, "duration out of range", DurationAllowed)
		}
		return time.Duration(ms) * time.Millisecond, nil
	} else if isInteger(t) {
		return 0, NewError("", s, "duration out of range", DurationAllowed)
	}
	d, err := time.ParseDuration(t)
	if err != nil {
		return 0, NewError("", s, "not a duration", DurationAllowed)
	}
	return d, nil
}

// isInteger reports whether s is an optionally signed run of decimal digits.
func isInteger(s string) bool {
	if s != "" && (s[0] == '-' || s[0] == '+') {
		s = s[1:]
	}
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
