package vfs

// Op names an operation of an FS or a File, as passed to a Mem.Inject hook.
type Op uint8

// The operations a Mem.Inject hook sees.
const (
	OpCreate   Op = iota + 1 // FS.Create
	OpOpen                   // FS.Open, FS.OpenReadWrite
	OpRead                   // File.ReadAt
	OpWrite                  // File.Write
	OpSync                   // File.Sync
	OpTruncate               // File.Truncate
	OpSize                   // File.Size
	OpClose                  // File.Close
	OpRemove                 // FS.Remove
	OpRename                 // FS.Rename (the hook sees the old path)
	OpList                   // FS.List
	OpMkdir                  // FS.MkdirAll
	OpSyncDir                // FS.SyncDir
	OpLock                   // FS.Lock
)

var opNames = [...]string{
	OpCreate: "create", OpOpen: "open", OpRead: "read", OpWrite: "write", OpSync: "sync",
	OpTruncate: "truncate", OpSize: "size", OpClose: "close", OpRemove: "remove",
	OpRename: "rename", OpList: "list", OpMkdir: "mkdir", OpSyncDir: "syncdir", OpLock: "lock",
}

// String returns the operation's lower-case name ("write", "syncdir").
func (o Op) String() string {
	if int(o) < len(opNames) && opNames[o] != "" {
		return opNames[o]
	}
	return "op?"
}

// Mutating reports whether the operation can change what is on disk (create, write,
// sync, truncate, remove, rename, mkdir, syncdir): the points where a crash test cuts
// the power.
func (o Op) Mutating() bool {
	switch o {
	case OpCreate, OpWrite, OpSync, OpTruncate, OpRemove, OpRename, OpMkdir, OpSyncDir:
		return true
	}
	return false
}
