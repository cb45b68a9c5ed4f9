package console

import (
	"encoding/base64"
	"net/http"
	"strings"
)

// flashCookie carries an action's result to the page the action redirects to.
const flashCookie = "console_flash"

// maxFlashText bounds a flash message (a cookie holds about 4 KiB).
const maxFlashText = 1500

// flash kinds (CSS classes flash-ok, flash-error).
const (
	flashOK    = "ok"
	flashError = "error"
)

// flash is a one-time message shown at the top of the next page.
type flash struct {
	Kind string // flashOK or flashError
	Text string
}

// setFlash stores f for the next page, in a cookie that only this site sends back
// (SameSite=Strict) and that scripts cannot read.
func setFlash(w http.ResponseWriter, f flash) {
	text := f.Text
	if len(text) > maxFlashText {
		text = strings.ToValidUTF8(text[:maxFlashText], "") + "…"
	}
	http.SetCookie(w, &http.Cookie{
		Name:     flashCookie,
		Value:    base64.RawURLEncoding.EncodeToString([]byte(f.Kind + "\x00" + text)),
		Path:     "/",
		MaxAge:   60,
		HttpOnly: true,
		SameSite: http.SameSiteStrictMode,
	})
}

// takeFlash returns the pending flash, if any, and clears it. A cookie that does not
// decode is dropped; its text is shown as plain text in any case.
func takeFlash(w http.ResponseWriter, r *http.Request) *flash {
	ck, err := r.Cookie(flashCookie)
	if err != nil {
		return nil
	}
	http.SetCookie(w, &http.Cookie{Name: flashCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode})
	raw, err := base64.RawURLEncoding.DecodeString(ck.Value)
	if err != nil {
		return nil
	}
	kind, text, ok := strings.Cut(string(raw), "\x00")
	if !ok || (kind != flashOK && kind != flashError) {
		return nil
	}
	return &flash{Kind: kind, Text: text}
}
