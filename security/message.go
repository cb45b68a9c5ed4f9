package security

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxShownRunes is how much of a client-chosen name errors and logs show.
const maxShownRunes = 64

// FailureMessage is ActiveMQ's text for a failed login, for the ERROR frame's message
// header: "User name [<login>] or password is invalid.", with "[null]" for no login
// as Java prints it. The login is sanitized (see sanitize).
func FailureMessage(login string) string {
	shown := "null"
	if login != "" {
		shown = sanitize(login)
	}
	return "User name [" + shown + "] or password is invalid."
}

// sanitize makes a client-chosen string safe to show in a log line or error: only
// printable characters (no control or format characters, so no forged log lines or
// reversed text), at most maxShownRunes of them, then "…" if it was longer.
// Invalid UTF-8 shows as U+FFFD.
func sanitize(s string) string {
	clean := true
	n := 0
	for _, r := range s {
		if !unicode.IsPrint(r) || r == utf8.RuneError {
			clean = false
			break
		}
		n++
	}
	if clean && n <= maxShownRunes {
		return s
	}
	var b strings.Builder
	n = 0
	for _, r := range s {
		if !unicode.IsPrint(r) {
			continue
		}
		if n == maxShownRunes {
			b.WriteString("…")
			break
		}
		b.WriteRune(r)
		n++
	}
	return b.String()
}
