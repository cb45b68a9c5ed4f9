package memstore

import "errors"

// ErrInvalid is returned by Commit for a batch holding an operation the store cannot
// apply: an Add without Dest or with Seq 0, or an AddSub whose Dest is not a topic.
// Nothing of such a batch is applied.
var ErrInvalid = errors.New("memstore: invalid operation")
