//go:build !unix

package vfs

import "os"

// lockFile is a no-op where flock(2) does not exist: there a directory is not protected
// against a second process.
func lockFile(*os.File) error { return nil }
