//go:build unix

package loadtest

import (
	"io/fs"
	"syscall"
)

// allocated returns the bytes of the disk blocks a file occupies.
func allocated(info fs.FileInfo) (int64, bool) {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int64(st.Blocks) * 512, true
}
