package security

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// failureLog logs failed logins, one line a second at most: a password-guessing
// storm must not flood the log. Each line says how many failures were left out
// since the previous one. It never logs a passcode.
type failureLog struct {
	log *slog.Logger

	mu         sync.Mutex
	last       time.Time
	suppressed uint64
}

// failureLogInterval is the least time between two failed-login lines.
const failureLogInterval = time.Second

// note logs a failure of user (sanitized) from host, or counts it for the next line.
func (f *failureLog) note(now time.Time, user, host string, attrs []slog.Attr) {
	f.mu.Lock()
	if since := now.Sub(f.last); !f.last.IsZero() && since >= 0 && since < failureLogInterval {
		f.suppressed++
		f.mu.Unlock()
		return
	}
	f.last = now
	suppressed := f.suppressed
	f.suppressed = 0
	f.mu.Unlock()

	all := append([]slog.Attr{slog.String("user", user), slog.String("host", host)}, attrs...)
	if suppressed > 0 {
		all = append(all, slog.Uint64("notLogged", suppressed))
	}
	f.log.LogAttrs(context.Background(), slog.LevelWarn, "security: login failed", all...)
}

// flush logs the count of failures not logged yet.
func (f *failureLog) flush() {
	f.mu.Lock()
	suppressed := f.suppressed
	f.suppressed = 0
	f.mu.Unlock()
	if suppressed > 0 {
		f.log.Warn("security: failed logins not logged (one line a second at most)", slog.Uint64("notLogged", suppressed))
	}
}
