package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/activemq-go/broker/internal/setting"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Exit statuses of the client commands (send, consume, browse, list, stat, purge,
// move), which scripts may test.
const (
	exitOK       = 0
	exitFailed   = 1 // the operation failed: an ERROR frame, an HTTP error, no connection
	exitUsage    = 2 // bad flags or arguments: nothing was attempted
	exitTimedOut = 3 // consume --timeout passed before --count messages arrived
	// exitInterrupted follows the shell's convention for SIGINT (128+2).
	exitInterrupted = 130
)

// exitCodesHelp is the part of the client commands' help that lists the exit statuses.
const exitCodesHelp = `

Exit status: 0 done; 1 failed (the broker refused, an HTTP error, no connection: the
error is printed); 2 usage error (nothing was attempted); 3 timed out (consume
--timeout passed before --count messages came); 130 interrupted.`

// exitError is an error with the status the process exits with.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// usageError marks err as a usage error (exit status 2).
func usageError(err error) error {
	if err == nil {
		return nil
	}
	return &exitError{code: exitUsage, err: err}
}

// usagef is a usage error with a formatted message.
func usagef(format string, args ...any) error {
	return usageError(fmt.Errorf(format, args...))
}

// errTimedOut is consume's error when --timeout passed first.
var errTimedOut = errors.New("timed out")

// errInterrupted is the error of a command stopped by SIGINT or SIGTERM.
var errInterrupted = errors.New("interrupted")

// exitCode is the exit status for the error a command returned.
func exitCode(err error) int {
	var ee *exitError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ee):
		return ee.code
	case errors.Is(err, errTimedOut):
		return exitTimedOut
	case errors.Is(err, errInterrupted), errors.Is(err, context.Canceled):
		return exitInterrupted
	}
	return exitFailed
}

// usageArgs makes the errors of an argument validator usage errors.
func usageArgs(v cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		return usageError(v(cmd, args))
	}
}

// flagError makes cobra's flag parsing errors usage errors; an unknown flag close to
// one of the command's gets a suggestion.
func flagError(cmd *cobra.Command, err error) error {
	if name, ok := strings.CutPrefix(err.Error(), "unknown flag: --"); ok {
		var names []string
		cmd.Flags().VisitAll(func(f *pflag.Flag) {
			if !f.Hidden && f.Deprecated == "" {
				names = append(names, f.Name)
			}
		})
		if s := setting.Suggest(name, names); s != "" {
			err = fmt.Errorf("%w (did you mean --%s?)", err, s)
		}
	}
	return usageError(err)
}
