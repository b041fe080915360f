package durable

import (
	"os"
	"path"
)

// Pending is a file written whole or not at all as it is streamed (an
// export archive): WriteFile for data that is not in memory at once. Its
// temp file is beside the target until Commit renames it over it;
// Cleanup, deferred, removes it when Commit never ran or failed.
type Pending struct {
	fsys      FS
	name, tmp string
	f         *os.File
	o         WriteOptions
	committed bool
}

// NewPending starts a Pending write of name in fsys with o (Perm, Hook,
// Check, NoDirSync and NoSync as for WriteFile).
func NewPending(fsys FS, name string, o WriteOptions) (*Pending, error) {
	f, tmp, err := writeTemp(fsys, name, nil, o.Perm, o.Hook, false)
	if err != nil {
		return nil, err
	}
	return &Pending{fsys: fsys, name: name, tmp: tmp, f: f, o: o}, nil
}

// Write appends b to the temp file.
func (p *Pending) Write(b []byte) (int, error) {
	if err := p.o.Hook.At(Write, display(p.fsys, p.tmp)); err != nil {
		return 0, &Error{Op: Write, Name: display(p.fsys, p.name), Err: err}
	}
	n, err := p.f.Write(b)
	if err != nil {
		return n, &Error{Op: Write, Name: display(p.fsys, p.name), Err: err}
	}
	return n, nil
}

// Commit makes what was written the file: fsynced, renamed over name,
// the folder fsynced, as WriteFile does. After a failure name is as it
// was.
func (p *Pending) Commit() error {
	var err error
	if !p.o.NoSync {
		if err = p.o.Hook.At(Fsync, display(p.fsys, p.tmp)); err == nil {
			err = p.f.Sync()
		}
		if err != nil {
			return &Error{Op: Fsync, Name: display(p.fsys, p.name), Err: err}
		}
	}
	if err = p.f.Close(); err != nil {
		return &Error{Op: Close, Name: display(p.fsys, p.name), Err: err}
	}
	if p.o.Check != nil {
		if err = p.o.Check(); err != nil {
			return err
		}
	}
	// rename removes the temp file when it fails: nothing is left to clean.
	p.committed = true
	if err = rename(p.fsys, p.tmp, p.name, p.o.Hook); err != nil || p.o.NoDirSync || p.o.NoSync {
		return err
	}
	return SyncDir(p.fsys, path.Dir(p.name), p.o.Hook)
}

// Cleanup removes the temp file unless Commit renamed it (or tried to):
// defer it right after NewPending.
func (p *Pending) Cleanup() {
	if p.committed {
		return
	}
	p.f.Close()
	_ = p.fsys.Remove(p.tmp)
}
