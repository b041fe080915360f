// Package fault is the disk-fault hook that the packages writing durable
// files (memory's store, the reflector's journal) call before each disk
// operation, and the names of those operations: one vocabulary, so that
// one hook given to both injects a full disk, an I/O error or a crash at
// any step in tests. Production passes no hook.
package fault

// The disk operations a Hook is called before.
const (
	Create   = "create"   // a new file (a temp file, a journal)
	Write    = "write"    // its content
	Fsync    = "fsync"    // the file
	Rename   = "rename"   // a temp file over its target
	FsyncDir = "fsyncdir" // the folder, after a creation, rename or removal
	Remove   = "remove"   // a file
)

// Hook is called before each disk operation op on the file or folder
// name; an error it returns is that operation's failure.
type Hook func(op, name string) error

// At calls h, if set: a nil Hook injects nothing.
func (h Hook) At(op, name string) error {
	if h == nil {
		return nil
	}
	return h(op, name)
}
