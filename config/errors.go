package config

import "github.com/activemq-go/broker/internal/setting"

// Error is what Load and Parse return for anything a user can get wrong in the
// file or the environment: the key, the value (secrets redacted) and what is
// allowed. Test for it with errors.As. It is setting.Error, which the
// persistence adapters also return for a bad option of their block, so one
// errors.As finds either.
type Error = setting.Error

// newError builds an *Error, redacting value if key names a secret.
func newError(key, value, problem, allowed string) *Error {
	return setting.NewError(key, value, problem, allowed)
}
