package config

import (
	"strings"

	"github.com/activemq-go/broker/internal/setting"
)

// Error is what Load and Parse return for anything a user can get wrong in the
// file or the environment: the key, the value (secrets redacted) and what is
// allowed. Test for it with errors.As. It is setting.Error, which the
// persistence adapters also return for a bad option of their block, so one
// errors.As finds either.
type Error = setting.Error

// newError builds an *Error, redacting value if key names a secret or may hold
// one (see holdsPassword).
func newError(key, value, problem, allowed string) *Error {
	if value != "" && holdsPassword(key) {
		value = setting.Redacted
	}
	return setting.NewError(key, value, problem, allowed)
}

// holdsPassword reports whether the value at key (a YAML path or an environment
// variable's name) may be, or contain, a user's password even though the key does
// not say so: plugins or plugins.simpleAuthentication written as a single value,
// the users list or one of its elements ("alice:pw" where a mapping belongs), or a
// key of an element other than the ones known to hold no secret. Keys naming a
// password are setting's business.
func holdsPassword(key string) bool {
	k := strings.ToLower(key)
	sep := "."
	if strings.HasPrefix(k, strings.ToLower(EnvPrefix)) {
		k, sep = k[len(EnvPrefix):], "_"
	}
	prefix := "plugins" + sep + "simpleauthentication"
	if k == "plugins" || k == prefix {
		return true
	}
	if !strings.HasPrefix(k, prefix+sep+"users") {
		return false
	}
	last := k[strings.LastIndex(k, sep)+len(sep):]
	if i := strings.IndexByte(last, '['); i >= 0 {
		last = last[:i]
	}
	switch last {
	case "username", "groups", "maxconnections":
		return false
	}
	return true
}
