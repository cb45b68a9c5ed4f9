package main

import "log/slog"

// jsonDurations is the JSON log handler's ReplaceAttr: a duration is written as the
// text format writes it, a string with its unit ("1.5ms", "2m0s"), not slog's bare
// integer of nanoseconds, which a log collector cannot tell from milliseconds or
// seconds. It covers slog.Duration and any time.Duration logged as a value.
func jsonDurations(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		return slog.String(a.Key, a.Value.Duration().String())
	}
	return a
}
