package vfs

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// Mem is an in-memory FS that remembers what is durable, so a test can take the state a
// power cut would leave (CrashClone), and that can fail any operation (Inject). It is safe
// for concurrent use.
//
// # What counts as synced
//
// Mem keeps, beside the current state, the durable state a crash would leave:
//
//   - File data: the contents as of the file's last File.Sync. Writes and truncations
//     after it are lost in a crash (CrashCloneKeep can keep a prefix of the unsynced
//     appended bytes, a torn write). A file that was never synced is empty after a crash
//     (if its directory entry survives).
//   - Directory entries: the entries of a directory as of its last FS.SyncDir. A file
//     created (or renamed into the directory) after it is gone after a crash; a file
//     removed (or renamed away) after it is back, with its synced data. Renames are
//     therefore durable only once both directories are synced.
//   - Directories themselves (MkdirAll) are durable at once: a simplification, as the
//     stores create their directories once, before anything that must survive.
//
// Open files keep working after Remove, as on POSIX. Locks and the Inject hook are not
// part of the durable state.
type Mem struct {
	mu    sync.Mutex
	dirs  map[string]*memDir
	locks map[string]bool
	hook  func(op Op, path string) error
}

// memDir is a directory: its entries now and as of its last SyncDir.
type memDir struct {
	live    map[string]*memNode
	durable map[string]*memNode
}

// memNode is the contents of one file.
type memNode struct {
	data      []byte
	syncedLen int    // data[:syncedLen] is durable, unless copied is set
	copied    bool   // a Truncate cut below syncedLen: the durable contents are in durable
	durable   []byte // the durable contents when copied
}

// durableData returns the contents a crash would leave (not a copy).
func (n *memNode) durableData() []byte {
	if n.copied {
		return n.durable
	}
	return n.data[:n.syncedLen]
}

// NewMem returns an empty in-memory FS with the directories "/" and ".".
func NewMem() *Mem {
	m := &Mem{dirs: make(map[string]*memDir), locks: make(map[string]bool)}
	m.dirs["/"] = newMemDir()
	m.dirs["."] = newMemDir()
	return m
}

func newMemDir() *memDir {
	return &memDir{live: make(map[string]*memNode), durable: make(map[string]*memNode)}
}

// Inject installs hook, called before every operation on the FS and its files with the
// operation and the path it concerns (for Rename the old path). A non-nil error fails the
// operation, which then has no effect (a failed Close still closes the file), and is
// returned as is. The hook runs without Mem's lock held, so it may call CrashClone. nil
// removes the hook.
func (m *Mem) Inject(hook func(op Op, path string) error) {
	m.mu.Lock()
	m.hook = hook
	m.mu.Unlock()
}

// check runs the hook, if any.
func (m *Mem) check(op Op, path string) error {
	m.mu.Lock()
	hook := m.hook
	m.mu.Unlock()
	if hook == nil {
		return nil
	}
	return hook(op, path)
}

// CrashClone returns a new Mem holding only what is durable in m: the state after a power
// cut at this instant. m is unchanged and stays usable.
func (m *Mem) CrashClone() *Mem { return m.CrashCloneWith(CrashOptions{}) }

// CrashOptions make a crash clone keep some of what was not synced, as a real system
// may have written it back before the power went.
type CrashOptions struct {
	// KeepData, if set, is asked for each file whose unsynced part only appends to its
	// synced contents how many of those n unsynced bytes survive (a torn write keeps a
	// prefix of what was written). Results outside [0, n] are clamped.
	KeepData func(path string, n int) int
	// FlushDirs keeps the current entries of every directory, as if the OS had written
	// the directories back just before the crash (files created, removed or renamed
	// without SyncDir then survive as they are now; their data is still only what was
	// synced).
	FlushDirs bool
}

// CrashCloneWith is CrashClone with some unsynced changes kept; see CrashOptions.
func (m *Mem) CrashCloneWith(o CrashOptions) *Mem {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := NewMem()
	clones := make(map[*memNode]*memNode)
	for dirPath, d := range m.dirs {
		cd := newMemDir()
		c.dirs[dirPath] = cd
		entries := d.durable
		if o.FlushDirs {
			entries = d.live
		}
		for name, n := range entries {
			cn := clones[n]
			if cn == nil {
				data := slices.Clone(n.durableData())
				if o.KeepData != nil && !n.copied && len(n.data) > n.syncedLen {
					extra := len(n.data) - n.syncedLen
					k := min(max(o.KeepData(filepath.Join(dirPath, name), extra), 0), extra)
					data = append(data, n.data[n.syncedLen:n.syncedLen+k]...)
				}
				cn = &memNode{data: data, syncedLen: len(data)}
				clones[n] = cn
			}
			cd.live[name] = cn
			cd.durable[name] = cn
		}
	}
	return c
}

// ReadFile returns a copy of the current contents of the named file (a test helper).
func (m *Mem) ReadFile(name string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.lookup("read", name)
	if err != nil {
		return nil, err
	}
	return slices.Clone(n.data), nil
}

// WriteFile replaces the contents of the named file, creating it if needed, and makes the
// contents and the directory entry durable at once (a test helper for setting up or
// damaging what is "on disk").
func (m *Mem) WriteFile(name string, data []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, base, err := m.parent("write", name)
	if err != nil {
		return err
	}
	n := d.live[base]
	if n == nil {
		n = &memNode{}
		d.live[base] = n
	}
	n.data = slices.Clone(data)
	n.syncedLen, n.copied, n.durable = len(n.data), false, nil
	d.durable[base] = n
	return nil
}

// parent returns the directory holding name and name's base. The caller holds m.mu.
func (m *Mem) parent(op, name string) (*memDir, string, error) {
	name = filepath.Clean(name)
	dir, base := filepath.Split(name)
	dir = filepath.Clean(dir)
	if base == "" || base == "." || base == ".." || base == "/" {
		return nil, "", &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	d := m.dirs[dir]
	if d == nil {
		return nil, "", &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist}
	}
	return d, base, nil
}

// lookup returns the node of an existing file. The caller holds m.mu.
func (m *Mem) lookup(op, name string) (*memNode, error) {
	d, base, err := m.parent(op, name)
	if err != nil {
		return nil, err
	}
	n := d.live[base]
	if n == nil {
		return nil, &fs.PathError{Op: op, Path: filepath.Clean(name), Err: fs.ErrNotExist}
	}
	return n, nil
}

// Create implements FS.
func (m *Mem) Create(name string) (File, error) {
	if err := m.check(OpCreate, name); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	d, base, err := m.parent("open", name)
	if err != nil {
		return nil, err
	}
	if m.dirs[filepath.Clean(name)] != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrExist}
	}
	n := d.live[base]
	if n == nil {
		n = &memNode{}
		d.live[base] = n
	} else {
		n.truncate(0)
	}
	return &memFile{fs: m, name: filepath.Clean(name), node: n, writable: true}, nil
}

// Open implements FS.
func (m *Mem) Open(name string) (File, error) { return m.open(OpOpen, name, false) }

// OpenReadWrite implements FS.
func (m *Mem) OpenReadWrite(name string) (File, error) { return m.open(OpOpen, name, true) }

func (m *Mem) open(op Op, name string, writable bool) (File, error) {
	if err := m.check(op, name); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.lookup("open", name)
	if err != nil {
		return nil, err
	}
	return &memFile{fs: m, name: filepath.Clean(name), node: n, writable: writable}, nil
}

// Remove implements FS.
func (m *Mem) Remove(name string) error {
	if err := m.check(OpRemove, name); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	d, base, err := m.parent("remove", name)
	if err != nil {
		return err
	}
	if d.live[base] == nil {
		if m.dirs[filepath.Clean(name)] != nil {
			return &fs.PathError{Op: "remove", Path: name, Err: fmt.Errorf("is a directory")}
		}
		return &fs.PathError{Op: "remove", Path: name, Err: fs.ErrNotExist}
	}
	delete(d.live, base)
	return nil
}

// Rename implements FS.
func (m *Mem) Rename(oldname, newname string) error {
	if err := m.check(OpRename, oldname); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	od, obase, err := m.parent("rename", oldname)
	if err != nil {
		return err
	}
	n := od.live[obase]
	if n == nil {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: fs.ErrNotExist}
	}
	nd, nbase, err := m.parent("rename", newname)
	if err != nil {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: fs.ErrNotExist}
	}
	delete(od.live, obase)
	nd.live[nbase] = n
	return nil
}

// List implements FS: files and subdirectories of dir, sorted.
func (m *Mem) List(dir string) ([]string, error) {
	if err := m.check(OpList, dir); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	dir = filepath.Clean(dir)
	d := m.dirs[dir]
	if d == nil {
		return nil, &fs.PathError{Op: "open", Path: dir, Err: fs.ErrNotExist}
	}
	names := make([]string, 0, len(d.live))
	for name := range d.live {
		names = append(names, name)
	}
	for p := range m.dirs {
		if p != dir && filepath.Dir(p) == dir {
			names = append(names, filepath.Base(p))
		}
	}
	slices.Sort(names)
	return names, nil
}

// MkdirAll implements FS. Directories are durable at once (see Mem).
func (m *Mem) MkdirAll(dir string, _ os.FileMode) error {
	if err := m.check(OpMkdir, dir); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	dir = filepath.Clean(dir)
	for p := dir; ; p = filepath.Dir(p) {
		if m.dirs[p] != nil {
			break
		}
		if d, base, err := m.parent("mkdir", p); err == nil && d.live[base] != nil {
			return &fs.PathError{Op: "mkdir", Path: p, Err: fs.ErrExist}
		}
		m.dirs[p] = newMemDir()
		if p == filepath.Dir(p) {
			break
		}
	}
	return nil
}

// SyncDir implements FS: the current entries of dir become durable.
func (m *Mem) SyncDir(dir string) error {
	if err := m.check(OpSyncDir, dir); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	d := m.dirs[filepath.Clean(dir)]
	if d == nil {
		return &fs.PathError{Op: "sync", Path: dir, Err: fs.ErrNotExist}
	}
	d.durable = make(map[string]*memNode, len(d.live))
	for name, n := range d.live {
		d.durable[name] = n
	}
	return nil
}

// Lock implements FS. The lock file is created like a real one (not synced).
func (m *Mem) Lock(name string) (io.Closer, error) {
	if err := m.check(OpLock, name); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	d, base, err := m.parent("lock", name)
	if err != nil {
		return nil, err
	}
	key := filepath.Clean(name)
	if m.locks[key] {
		return nil, &fs.PathError{Op: "lock", Path: key, Err: ErrLocked}
	}
	if d.live[base] == nil {
		d.live[base] = &memNode{}
	}
	m.locks[key] = true
	return &memLock{m: m, key: key}, nil
}

type memLock struct {
	m    *Mem
	key  string
	once sync.Once
}

func (l *memLock) Close() error {
	l.once.Do(func() {
		l.m.mu.Lock()
		delete(l.m.locks, l.key)
		l.m.mu.Unlock()
	})
	return nil
}

// String lists the files with their current and durable sizes, for test failures.
func (m *Mem) String() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var lines []string
	for p, d := range m.dirs {
		for name, n := range d.live {
			_, durable := d.durable[name]
			lines = append(lines, fmt.Sprintf("%s size=%d synced=%d entry-durable=%v",
				filepath.Join(p, name), len(n.data), len(n.durableData()), durable))
		}
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

// truncate sets the size of n, keeping its durable contents intact.
func (n *memNode) truncate(size int64) {
	if int(size) < n.syncedLen && !n.copied {
		n.durable, n.copied = slices.Clone(n.data[:n.syncedLen]), true
	}
	if int(size) <= len(n.data) {
		clear(n.data[size:]) // so stale bytes never reappear through a later extension
		n.data = n.data[:size]
		return
	}
	n.data = append(n.data, make([]byte, int(size)-len(n.data))...)
}

// memFile is an open file of a Mem.
type memFile struct {
	fs       *Mem
	name     string
	node     *memNode
	writable bool
	closed   bool // guarded by fs.mu
}

func (f *memFile) pathErr(op string, err error) error {
	return &fs.PathError{Op: op, Path: f.name, Err: err}
}

func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	if err := f.fs.check(OpRead, f.name); err != nil {
		return 0, err
	}
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if f.closed {
		return 0, f.pathErr("read", ErrClosedFile)
	}
	if off < 0 {
		return 0, f.pathErr("read", fs.ErrInvalid)
	}
	if off >= int64(len(f.node.data)) {
		return 0, io.EOF
	}
	n := copy(p, f.node.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (f *memFile) Write(p []byte) (int, error) {
	if err := f.fs.check(OpWrite, f.name); err != nil {
		return 0, err
	}
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	switch {
	case f.closed:
		return 0, f.pathErr("write", ErrClosedFile)
	case !f.writable:
		return 0, f.pathErr("write", ErrReadOnly)
	}
	f.node.data = append(f.node.data, p...)
	return len(p), nil
}

func (f *memFile) Sync() error {
	if err := f.fs.check(OpSync, f.name); err != nil {
		return err
	}
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if f.closed {
		return f.pathErr("sync", ErrClosedFile)
	}
	n := f.node
	n.syncedLen, n.copied, n.durable = len(n.data), false, nil
	return nil
}

func (f *memFile) Truncate(size int64) error {
	if err := f.fs.check(OpTruncate, f.name); err != nil {
		return err
	}
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	switch {
	case f.closed:
		return f.pathErr("truncate", ErrClosedFile)
	case !f.writable:
		return f.pathErr("truncate", ErrReadOnly)
	case size < 0:
		return f.pathErr("truncate", fs.ErrInvalid)
	}
	f.node.truncate(size)
	return nil
}

func (f *memFile) Size() (int64, error) {
	if err := f.fs.check(OpSize, f.name); err != nil {
		return 0, err
	}
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if f.closed {
		return 0, f.pathErr("stat", ErrClosedFile)
	}
	return int64(len(f.node.data)), nil
}

func (f *memFile) Close() error {
	err := f.fs.check(OpClose, f.name)
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if f.closed {
		return f.pathErr("close", ErrClosedFile)
	}
	f.closed = true
	return err
}
