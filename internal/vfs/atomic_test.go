package vfs_test

import (
	"errors"
	"io"
	"io/fs"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/internal/vfs"
)

func readFile(t *testing.T, fsys vfs.FS, name string) string {
	t.Helper()
	f, err := fsys.Open(name)
	require.NoError(t, err)
	defer f.Close()
	return string(readAll(t, f))
}

func TestWriteFileAtomic(t *testing.T) {
	forEachFS(t, func(t *testing.T, fsys vfs.FS, dir string) {
		name := filepath.Join(dir, "state")
		require.NoError(t, vfs.WriteFileAtomic(fsys, name, []byte("first")))
		require.Equal(t, "first", readFile(t, fsys, name))
		require.NoError(t, vfs.WriteFileAtomicFunc(fsys, name, func(w io.Writer) error {
			_, err := io.WriteString(w, "sec")
			if err == nil {
				_, err = io.WriteString(w, "ond")
			}
			return err
		}))
		require.Equal(t, "second", readFile(t, fsys, name))
		names, err := fsys.List(dir)
		require.NoError(t, err)
		require.Equal(t, []string{"state"}, names, "no temporary file is left behind")
	})
}

func TestWriteFileAtomicWriteError(t *testing.T) {
	forEachFS(t, func(t *testing.T, fsys vfs.FS, dir string) {
		name := filepath.Join(dir, "state")
		require.NoError(t, vfs.WriteFileAtomic(fsys, name, []byte("old")))
		boom := errors.New("encoder failed")
		err := vfs.WriteFileAtomicFunc(fsys, name, func(w io.Writer) error {
			_, _ = io.WriteString(w, "half")
			return boom
		})
		require.ErrorIs(t, err, boom)
		require.Equal(t, "old", readFile(t, fsys, name))
		_, err = fsys.Open(name + vfs.TempSuffix)
		require.ErrorIs(t, err, fs.ErrNotExist, "the temporary file is removed")
	})
}

// setUp returns a Mem holding a durable file /d/state with "old".
func setUp(t *testing.T) *vfs.Mem {
	t.Helper()
	m := vfs.NewMem()
	require.NoError(t, m.MkdirAll("/d", 0o755))
	require.NoError(t, m.WriteFile("/d/state", []byte("old")))
	return m
}

// TestWriteFileAtomicCrash cuts the power before each mutating operation
// WriteFileAtomic makes, and after it returns: every crash leaves the old contents or
// the new, whole, and once it returned, the new.
func TestWriteFileAtomicCrash(t *testing.T) {
	newData := []byte("new contents, longer than the old")
	// Count the operations of one run.
	m := setUp(t)
	points := 0
	m.Inject(func(op vfs.Op, _ string) error {
		if op.Mutating() {
			points++
		}
		return nil
	})
	require.NoError(t, vfs.WriteFileAtomic(m, "/d/state", newData))
	require.GreaterOrEqual(t, points, 5, "create, write, sync, rename, syncdir")

	sawOld, sawNew := false, false
	for cut := 0; cut <= points; cut++ {
		m := setUp(t)
		// crashed is the power cut; flushed the same with the directories written back
		// by the OS on their own.
		var crashed, flushed *vfs.Mem
		n := 0
		m.Inject(func(op vfs.Op, _ string) error {
			if op.Mutating() {
				if n == cut {
					crashed, flushed = m.CrashClone(), m.CrashCloneWith(vfs.CrashOptions{FlushDirs: true})
				}
				n++
			}
			return nil
		})
		require.NoError(t, vfs.WriteFileAtomic(m, "/d/state", newData))
		if crashed == nil { // after it returned
			crashed, flushed = m.CrashClone(), m.CrashCloneWith(vfs.CrashOptions{FlushDirs: true})
		}
		for _, c := range []*vfs.Mem{crashed, flushed} {
			got, err := c.ReadFile("/d/state")
			require.NoError(t, err, "cut %d", cut)
			switch string(got) {
			case "old":
				sawOld = true
			case string(newData):
				sawNew = true
			default:
				t.Fatalf("cut %d: a crash left %q", cut, got)
			}
		}
		got, err := crashed.ReadFile("/d/state")
		require.NoError(t, err)
		if cut == points {
			require.Equal(t, string(newData), string(got), "durable once WriteFileAtomic returned")
		}
	}
	require.True(t, sawOld && sawNew)
}

// TestWriteFileAtomicFailures fails each operation in turn: the error is returned, and
// the old file is intact, now and after a crash (but for a failed directory fsync,
// after which the new file is in place but may not survive a crash).
func TestWriteFileAtomicFailures(t *testing.T) {
	for _, failing := range []vfs.Op{vfs.OpCreate, vfs.OpWrite, vfs.OpSync, vfs.OpClose, vfs.OpRename, vfs.OpSyncDir} {
		t.Run(failing.String(), func(t *testing.T) {
			m := setUp(t)
			var crashed *vfs.Mem
			m.Inject(func(op vfs.Op, path string) error {
				if op == failing {
					crashed = m.CrashClone()
					return vfs.ErrInjected
				}
				return nil
			})
			err := vfs.WriteFileAtomic(m, "/d/state", []byte("new"))
			m.Inject(nil)
			require.ErrorIs(t, err, vfs.ErrInjected)
			require.NotNil(t, crashed)
			got, rerr := crashed.ReadFile("/d/state")
			require.NoError(t, rerr)
			require.Equal(t, "old", string(got), "a crash at the failing operation keeps the old file")
			got, rerr = m.ReadFile("/d/state")
			require.NoError(t, rerr)
			if failing == vfs.OpSyncDir {
				require.Equal(t, "new", string(got))
				return
			}
			require.Equal(t, "old", string(got), "a failed write leaves the old file")
			got, rerr = m.CrashClone().ReadFile("/d/state")
			require.NoError(t, rerr)
			require.Equal(t, "old", string(got))
			_, rerr = m.ReadFile("/d/state" + vfs.TempSuffix)
			require.ErrorIs(t, rerr, fs.ErrNotExist, "the temporary file is removed")
		})
	}
}

// TestWriteFileAtomicCrashBeforeRename is the case the helper exists for: the new
// contents are written and synced, the power goes before the rename, and the old file
// is what is on disk.
func TestWriteFileAtomicCrashBeforeRename(t *testing.T) {
	m := setUp(t)
	var crashed *vfs.Mem
	m.Inject(func(op vfs.Op, path string) error {
		if op == vfs.OpRename {
			crashed = m.CrashClone()
			return vfs.ErrInjected // the process dies here
		}
		return nil
	})
	require.ErrorIs(t, vfs.WriteFileAtomic(m, "/d/state", []byte("new")), vfs.ErrInjected)
	got, err := crashed.ReadFile("/d/state")
	require.NoError(t, err)
	require.Equal(t, "old", string(got))
}
