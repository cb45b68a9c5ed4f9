package vfs

import (
	"errors"
	"io"
	"io/fs"
	"path/filepath"
)

// TempSuffix ends the name of the temporary file WriteFileAtomic writes before renaming
// it over its target. A file with it is the leftover of a crash mid-write: a store's
// recovery removes it.
const TempSuffix = ".tmp"

// WriteFileAtomic replaces the file name with data; see WriteFileAtomicFunc.
func WriteFileAtomic(fsys FS, name string, data []byte) error {
	return WriteFileAtomicFunc(fsys, name, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// WriteFileAtomicFunc replaces the file name with what write writes, so that a crash at
// any moment leaves either the old file (or none, if there was none) or the new one,
// whole: it writes name+TempSuffix through write, fsyncs and closes it, renames it over
// name and fsyncs name's directory. Every error on the way is returned (write's
// first); the temporary file is then removed, and name is as it was unless only the
// final directory fsync failed (the rename is done but may not survive a crash).
func WriteFileAtomicFunc(fsys FS, name string, write func(w io.Writer) error) error {
	tmp := name + TempSuffix
	f, err := fsys.Create(tmp)
	if err != nil {
		return err
	}
	err = write(f)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = fsys.Rename(tmp, name)
	}
	if err != nil {
		if rerr := fsys.Remove(tmp); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
			err = errors.Join(err, rerr)
		}
		return err
	}
	return fsys.SyncDir(filepath.Dir(name))
}
