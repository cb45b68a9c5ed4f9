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

// Both implementations must behave the same for everything but durability.
func forEachFS(t *testing.T, test func(t *testing.T, fsys vfs.FS, dir string)) {
	t.Run("OS", func(t *testing.T) { test(t, vfs.OS, t.TempDir()) })
	t.Run("Mem", func(t *testing.T) {
		m := vfs.NewMem()
		require.NoError(t, m.MkdirAll("/tmp/test", 0o755))
		test(t, m, "/tmp/test")
	})
}

func readAll(t *testing.T, f vfs.File) []byte {
	t.Helper()
	size, err := f.Size()
	require.NoError(t, err)
	buf := make([]byte, size)
	n, err := f.ReadAt(buf, 0)
	if n < len(buf) {
		require.NoError(t, err)
	}
	return buf[:n]
}

func TestFileAppendReadTruncate(t *testing.T) {
	forEachFS(t, func(t *testing.T, fsys vfs.FS, dir string) {
		name := filepath.Join(dir, "a.log")
		f, err := fsys.Create(name)
		require.NoError(t, err)
		_, err = f.Write([]byte("hello "))
		require.NoError(t, err)
		_, err = f.Write([]byte("world"))
		require.NoError(t, err)
		require.Equal(t, "hello world", string(readAll(t, f)))

		buf := make([]byte, 5)
		n, err := f.ReadAt(buf, 6)
		require.NoError(t, err)
		require.Equal(t, "world", string(buf[:n]))
		n, err = f.ReadAt(buf, 8)
		require.ErrorIs(t, err, io.EOF, "a short read reports EOF")
		require.Equal(t, "rld", string(buf[:n]))

		require.NoError(t, f.Truncate(5))
		_, err = f.Write([]byte("!"))
		require.NoError(t, err, "Write appends at the new end after Truncate")
		require.Equal(t, "hello!", string(readAll(t, f)))
		require.NoError(t, f.Sync())
		require.NoError(t, f.Close())

		// Reopen for appending: writes go to the end.
		f, err = fsys.OpenReadWrite(name)
		require.NoError(t, err)
		_, err = f.Write([]byte("?"))
		require.NoError(t, err)
		size, err := f.Size()
		require.NoError(t, err)
		require.EqualValues(t, 7, size)
		require.NoError(t, f.Close())

		ro, err := fsys.Open(name)
		require.NoError(t, err)
		require.Equal(t, "hello!?", string(readAll(t, ro)))
		_, err = ro.Write([]byte("x"))
		require.Error(t, err, "Write on a read-only file")
		require.NoError(t, ro.Close())

		// Create truncates an existing file.
		f, err = fsys.Create(name)
		require.NoError(t, err)
		require.Empty(t, readAll(t, f))
		require.NoError(t, f.Close())
	})
}

func TestDirectoryOperations(t *testing.T) {
	forEachFS(t, func(t *testing.T, fsys vfs.FS, dir string) {
		sub := filepath.Join(dir, "x", "y")
		require.NoError(t, fsys.MkdirAll(sub, 0o755))
		require.NoError(t, fsys.MkdirAll(sub, 0o755), "MkdirAll of an existing directory")
		for _, n := range []string{"b", "a", "c"} {
			f, err := fsys.Create(filepath.Join(sub, n))
			require.NoError(t, err)
			require.NoError(t, f.Close())
		}
		names, err := fsys.List(sub)
		require.NoError(t, err)
		require.Equal(t, []string{"a", "b", "c"}, names)
		names, err = fsys.List(filepath.Join(dir, "x"))
		require.NoError(t, err)
		require.Equal(t, []string{"y"}, names)

		require.NoError(t, fsys.Rename(filepath.Join(sub, "a"), filepath.Join(sub, "c")), "rename replaces")
		require.NoError(t, fsys.Remove(filepath.Join(sub, "b")))
		names, err = fsys.List(sub)
		require.NoError(t, err)
		require.Equal(t, []string{"c"}, names)
		require.NoError(t, fsys.SyncDir(sub))

		_, err = fsys.Open(filepath.Join(sub, "a"))
		require.ErrorIs(t, err, fs.ErrNotExist)
		require.ErrorIs(t, fsys.Remove(filepath.Join(sub, "a")), fs.ErrNotExist)
		require.ErrorIs(t, fsys.Rename(filepath.Join(sub, "a"), filepath.Join(sub, "d")), fs.ErrNotExist)
		_, err = fsys.List(filepath.Join(dir, "missing"))
		require.ErrorIs(t, err, fs.ErrNotExist)
		_, err = fsys.Create(filepath.Join(dir, "missing", "f"))
		require.ErrorIs(t, err, fs.ErrNotExist)
		require.Error(t, fsys.SyncDir(filepath.Join(dir, "missing")))
	})
}

func TestOpenFileSurvivesRemove(t *testing.T) {
	forEachFS(t, func(t *testing.T, fsys vfs.FS, dir string) {
		name := filepath.Join(dir, "f")
		f, err := fsys.Create(name)
		require.NoError(t, err)
		_, err = f.Write([]byte("data"))
		require.NoError(t, err)
		require.NoError(t, fsys.Remove(name))
		require.Equal(t, "data", string(readAll(t, f)))
		require.NoError(t, f.Close())
	})
}

func TestLock(t *testing.T) {
	forEachFS(t, func(t *testing.T, fsys vfs.FS, dir string) {
		name := filepath.Join(dir, "lock")
		l, err := fsys.Lock(name)
		require.NoError(t, err)
		_, err = fsys.Lock(name)
		require.ErrorIs(t, err, vfs.ErrLocked)
		require.NoError(t, l.Close())
		l, err = fsys.Lock(name)
		require.NoError(t, err, "the lock is free again after Close")
		require.NoError(t, l.Close())
	})
}

func TestMemCrashCloneKeepsOnlySynced(t *testing.T) {
	m := vfs.NewMem()
	require.NoError(t, m.MkdirAll("/d", 0o755))

	// synced: data synced and directory entry synced.
	synced, err := m.Create("/d/synced")
	require.NoError(t, err)
	_, err = synced.Write([]byte("durable"))
	require.NoError(t, err)
	require.NoError(t, synced.Sync())
	// noentry: data synced, but its directory entry never is.
	// unsyncedData: entry synced, data never synced.
	unsyncedData, err := m.Create("/d/unsynced-data")
	require.NoError(t, err)
	require.NoError(t, m.SyncDir("/d"))
	noEntry, err := m.Create("/d/no-entry")
	require.NoError(t, err)
	_, err = noEntry.Write([]byte("x"))
	require.NoError(t, err)
	require.NoError(t, noEntry.Sync())
	_, err = unsyncedData.Write([]byte("lost"))
	require.NoError(t, err)
	// A tail written after the last sync is lost.
	_, err = synced.Write([]byte(" + tail"))
	require.NoError(t, err)

	c := m.CrashClone()
	names, err := c.List("/d")
	require.NoError(t, err)
	require.Equal(t, []string{"synced", "unsynced-data"}, names)
	got, err := c.ReadFile("/d/synced")
	require.NoError(t, err)
	require.Equal(t, "durable", string(got))
	got, err = c.ReadFile("/d/unsynced-data")
	require.NoError(t, err)
	require.Empty(t, got)

	// The original is untouched and the clone is independent.
	got, err = m.ReadFile("/d/synced")
	require.NoError(t, err)
	require.Equal(t, "durable + tail", string(got))
	f, err := c.OpenReadWrite("/d/synced")
	require.NoError(t, err)
	_, err = f.Write([]byte("!"))
	require.NoError(t, err)
	got, err = m.ReadFile("/d/synced")
	require.NoError(t, err)
	require.Equal(t, "durable + tail", string(got))

	// A torn write keeps a prefix of the unsynced tail.
	asked := map[string]int{}
	torn := m.CrashCloneWith(vfs.CrashOptions{KeepData: func(path string, n int) int {
		asked[path] = n
		if path == "/d/synced" {
			return 3
		}
		return 0
	}})
	require.Equal(t, map[string]int{"/d/synced": len(" + tail"), "/d/unsynced-data": len("lost")}, asked,
		"only durable files with an unsynced appended tail are asked")
	got, err = torn.ReadFile("/d/synced")
	require.NoError(t, err)
	require.Equal(t, "durable + ", string(got))

	// With the directories flushed, the unsynced entry survives, with its synced data.
	flushed := m.CrashCloneWith(vfs.CrashOptions{FlushDirs: true})
	names, err = flushed.List("/d")
	require.NoError(t, err)
	require.Equal(t, []string{"no-entry", "synced", "unsynced-data"}, names)
	got, err = flushed.ReadFile("/d/no-entry")
	require.NoError(t, err)
	require.Equal(t, "x", string(got))
}

func TestMemCrashCloneRenameAndRemove(t *testing.T) {
	m := vfs.NewMem()
	require.NoError(t, m.MkdirAll("/d", 0o755))
	write := func(name, data string) {
		f, err := m.Create(name)
		require.NoError(t, err)
		_, err = f.Write([]byte(data))
		require.NoError(t, err)
		require.NoError(t, f.Sync())
		require.NoError(t, f.Close())
	}
	write("/d/old", "v1")
	write("/d/gone", "g")
	require.NoError(t, m.SyncDir("/d"))

	// Write-temp, sync, rename: without the directory sync the rename is lost.
	write("/d/tmp", "v2")
	require.NoError(t, m.Rename("/d/tmp", "/d/old"))
	require.NoError(t, m.Remove("/d/gone"))
	c := m.CrashClone()
	got, err := c.ReadFile("/d/old")
	require.NoError(t, err)
	require.Equal(t, "v1", string(got), "unsynced rename")
	names, err := c.List("/d")
	require.NoError(t, err)
	require.Equal(t, []string{"gone", "old"}, names, "an unsynced remove comes back; the unsynced temp file is gone")

	require.NoError(t, m.SyncDir("/d"))
	c = m.CrashClone()
	got, err = c.ReadFile("/d/old")
	require.NoError(t, err)
	require.Equal(t, "v2", string(got), "rename after the directory sync")
	names, err = c.List("/d")
	require.NoError(t, err)
	require.Equal(t, []string{"old"}, names)

	require.NoError(t, m.Remove("/d/old"))
	names, err = m.CrashCloneWith(vfs.CrashOptions{FlushDirs: true}).List("/d")
	require.NoError(t, err)
	require.Empty(t, names, "a flushed remove is durable")
}

func TestMemCrashCloneTruncate(t *testing.T) {
	m := vfs.NewMem()
	require.NoError(t, m.MkdirAll("/d", 0o755))
	f, err := m.Create("/d/f")
	require.NoError(t, err)
	require.NoError(t, m.SyncDir("/d"))
	_, err = f.Write([]byte("0123456789"))
	require.NoError(t, err)
	require.NoError(t, f.Sync())
	require.NoError(t, f.Truncate(4))
	_, err = f.Write([]byte("abc"))
	require.NoError(t, err)

	got, err := m.CrashClone().ReadFile("/d/f")
	require.NoError(t, err)
	require.Equal(t, "0123456789", string(got), "an unsynced truncate and the writes after it are lost")
	got, err = m.ReadFile("/d/f")
	require.NoError(t, err)
	require.Equal(t, "0123abc", string(got))

	require.NoError(t, f.Sync())
	got, err = m.CrashClone().ReadFile("/d/f")
	require.NoError(t, err)
	require.Equal(t, "0123abc", string(got))

	require.NoError(t, f.Truncate(10))
	got, err = m.ReadFile("/d/f")
	require.NoError(t, err)
	require.Equal(t, "0123abc\x00\x00\x00", string(got), "extending truncate fills with zeros")
}

func TestMemInject(t *testing.T) {
	m := vfs.NewMem()
	require.NoError(t, m.MkdirAll("/d", 0o755))
	f, err := m.Create("/d/f")
	require.NoError(t, err)

	var seen []string
	writes := 0
	m.Inject(func(op vfs.Op, path string) error {
		seen = append(seen, op.String()+" "+path)
		if op == vfs.OpWrite {
			writes++
			if writes == 2 {
				return vfs.ErrInjected
			}
		}
		if op == vfs.OpSync {
			// The hook runs without the lock: it may take a crash clone.
			_ = m.CrashClone()
			return vfs.ErrInjected
		}
		return nil
	})
	_, err = f.Write([]byte("a"))
	require.NoError(t, err)
	_, err = f.Write([]byte("b"))
	require.ErrorIs(t, err, vfs.ErrInjected)
	require.ErrorIs(t, f.Sync(), vfs.ErrInjected)
	require.NoError(t, m.SyncDir("/d"))

	m.Inject(nil)
	got, err := m.ReadFile("/d/f")
	require.NoError(t, err)
	require.Equal(t, "a", string(got), "a failed write has no effect")
	got, err = m.CrashClone().ReadFile("/d/f")
	require.NoError(t, err)
	require.Empty(t, got, "a failed sync makes nothing durable")
	require.Equal(t, []string{"write /d/f", "write /d/f", "sync /d/f", "syncdir /d"}, seen)

	m.Inject(func(op vfs.Op, _ string) error {
		if op == vfs.OpClose {
			return vfs.ErrInjected
		}
		return nil
	})
	require.ErrorIs(t, f.Close(), vfs.ErrInjected)
	m.Inject(nil)
	require.ErrorIs(t, f.Close(), vfs.ErrClosedFile, "a failed Close still closes")
}

func TestMemClosedFile(t *testing.T) {
	m := vfs.NewMem()
	f, err := m.Create("/f")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	_, err = f.Write([]byte("x"))
	require.ErrorIs(t, err, vfs.ErrClosedFile)
	_, err = f.ReadAt(make([]byte, 1), 0)
	require.ErrorIs(t, err, vfs.ErrClosedFile)
	require.ErrorIs(t, f.Sync(), vfs.ErrClosedFile)
	require.True(t, errors.Is(f.Truncate(0), vfs.ErrClosedFile))
}

func TestOpStrings(t *testing.T) {
	for op := vfs.OpCreate; op <= vfs.OpLock; op++ {
		require.NotEqual(t, "op?", op.String(), "op %d", op)
	}
	require.True(t, vfs.OpSync.Mutating())
	require.False(t, vfs.OpRead.Mutating())
}
