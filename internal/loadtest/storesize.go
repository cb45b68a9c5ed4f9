package loadtest

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
)

// DirSize is what the files below a directory take.
type DirSize struct {
	// Bytes is the sum of the regular files' sizes.
	Bytes int64
	// Allocated is the sum of the disk blocks they occupy, or -1 where the
	// platform does not say. It differs from Bytes for preallocated
	// (sparse) files: ActiveMQ's KahaDB creates its 32 MiB journal files
	// at full length.
	Allocated int64
	// Files counts the regular files.
	Files int
}

// measureDir returns the size of every regular file below dir, at any
// depth; symbolic links below dir are not followed. A file that disappears
// during the walk (a journal file being deleted) is skipped.
func measureDir(dir string) (DirSize, error) {
	dir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return DirSize{}, err
	}
	size := DirSize{}
	blocks, known := int64(0), true
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if path != dir && errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if path == dir && !d.IsDir() {
			return fmt.Errorf("%s: not a directory", dir)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		size.Bytes += info.Size()
		size.Files++
		if b, ok := allocated(info); ok {
			blocks += b
		} else {
			known = false
		}
		return nil
	})
	if err != nil {
		return DirSize{}, err
	}
	size.Allocated = -1
	if known {
		size.Allocated = blocks
	}
	return size, nil
}
