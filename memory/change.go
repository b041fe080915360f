package memory

// ChangeKind says what a change does to a memory file.
type ChangeKind string

// The kinds of change.
const (
	ChangeCreate ChangeKind = "create" // a file made where there was none (a write or an append)
	ChangeWrite  ChangeKind = "write"  // a whole fact file replaced
	ChangePatch  ChangeKind = "patch"  // text replaced in a file
	ChangeAppend ChangeKind = "append" // an entry added to an episode file
	ChangeDelete ChangeKind = "delete" // a file removed
	// ChangeEdit is a change made outside this store (a person's editor,
	// a script, another process), seen by the watcher; After is absent
	// when the file was deleted.
	ChangeEdit ChangeKind = "edit"
)

// Commit is one change to a memory file: whose file, what kind of change,
// the version it replaces and the version it makes.
type Commit struct {
	User          string
	Path          string
	Kind          ChangeKind
	Before, After Version
	// Text and Previous are the new and the replaced text, given to
	// Options.OnChange only (the history keeps them); nil when there is
	// none or it is not known (a hand edit's earlier text). A delete's
	// Previous is the text the file had just before the store removed it.
	Text, Previous []byte
	// Forgotten are the lines a model's change deleted for a person's
	// "forget that" (see forgetting): the history must keep none of them
	// in any version. Forget marks a delete made by a forget (a roll-up
	// of a month that lost lines): the history of the file goes with it.
	Forgotten []string
	Forget    bool
}

// change describes a change of kind from before to after.
func (u *User) change(p string, kind ChangeKind, before, after Version) Commit {
	if !before.Exists {
		kind = ChangeCreate
	}
	return Commit{User: u.name, Path: p, Kind: kind, Before: before, After: after}
}

// changed tells the store's observer of a change made.
func (u *User) changed(c Commit) {
	if u.s.opts.OnChange != nil {
		u.s.opts.OnChange(c)
	}
}

// CommitHook is told of a change after its new text is safely in a temp
// file and just before the rename makes it the file; an error aborts the
// change. The reflector journals the change there, so a replay after a
// crash can tell whether it was made. nil: nobody is told.
type CommitHook func(Commit) error
