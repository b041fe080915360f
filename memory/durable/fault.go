package durable

// The disk operations a Hook is called before.
const (
	Create   = "create"   // a new file (a temp file, a journal)
	Write    = "write"    // its content
	Fsync    = "fsync"    // the file
	Rename   = "rename"   // a temp file over its target
	FsyncDir = "fsyncdir" // the folder, after a creation, rename or removal
	Remove   = "remove"   // a file
	Truncate = "truncate" // a journal cut back after a failed append
)

// Hook is called before each disk operation op on the file or folder
// name (as the FS shows it: Dir gives full paths, an *os.Root names
// inside it); an error it returns is that operation's failure. Tests
// inject a full disk, an I/O error or a crash (a hook that never returns
// while the process is killed) at any step; production passes none.
type Hook func(op, name string) error

// At calls h, if set: a nil Hook injects nothing.
func (h Hook) At(op, name string) error {
	if h == nil {
		return nil
	}
	return h(op, name)
}
