//go:build !unix

package loadtest

import "io/fs"

// allocated is unknown on this platform.
func allocated(fs.FileInfo) (int64, bool) { return 0, false }
