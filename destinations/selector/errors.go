package selector

import (
	"errors"
	"fmt"
)

// ErrSyntax is wrapped by every error Parse returns: the selector is not valid.
var ErrSyntax = errors.New("selector: syntax error")

// SyntaxError describes why and where a selector failed to parse. Parse returns it as
// *SyntaxError, which wraps ErrSyntax, so both errors.Is(err, ErrSyntax) and
// errors.As(err, &*SyntaxError) work.
type SyntaxError struct {
	// Pos is the 1-based column of the offending character or token, counted in
	// characters (runes) from the start of the selector; a selector spanning several
	// lines is counted as one line.
	Pos int
	// Msg says what was wrong, usually "expected X, found Y".
	Msg string
}

// Error renders the error as "selector: syntax error at column 12: expected ...".
func (e *SyntaxError) Error() string {
	return fmt.Sprintf("selector: syntax error at column %d: %s", e.Pos, e.Msg)
}

// Unwrap returns ErrSyntax.
func (e *SyntaxError) Unwrap() error { return ErrSyntax }
