package memory

// own notes v as the version of p this store is about to make, just
// before the rename (or remove) that makes it; done ends the change. In
// between, the watcher may handle an event of an earlier change (or of
// this one) and find either the text being replaced or v: neither is a
// hand edit, anything else is.
func (u *User) own(p string, v Version) {
	u.kmu.Lock()
	defer u.kmu.Unlock()
	if u.making == nil {
		u.making = map[string]Version{}
	}
	u.making[p] = v
	u.changes++
}

// done ends the change own began: its version is the one known from now
// on, even when the watcher saw a person's edit after the rename while it
// was under way (that edit's own event then tells it again, after the
// store's change, so the last text told is the one on disk). It is called
// whether or not the change was made, as own alone was before.
func (u *User) done(p string) {
	u.kmu.Lock()
	defer u.kmu.Unlock()
	v, ok := u.making[p]
	if !ok {
		return
	}
	delete(u.making, p)
	u.changes++
	if u.known == nil {
		u.known = map[string]Version{}
	}
	u.known[p] = v
}

// noticeEdit is the watcher's look at p after an event: when its version
// is neither what this store wrote (or is writing) nor what was last
// seen, someone else changed it, and Options.OnChange is told
// (ChangeEdit, with the new text). An empty file is a save in progress
// (editors truncate, then write): the event of the write that follows
// tells. The text is compared
// with what was known while it was read: when the store began or ended a
// change of the user's files meanwhile, it is read again.
func (u *User) noticeEdit(p string) {
	root, ref, err := u.openRoot(false)
	if err != nil || root == nil {
		return
	}
	defer ref.release()
	var data []byte
	var v Version
	for {
		u.kmu.Lock()
		changes := u.changes
		u.kmu.Unlock()
		data, v, err = currentVersion(root, p)
		if err != nil || (v.Exists && v.Size == 0) {
			return
		}
		if u.s.opts.watchRead != nil {
			u.s.opts.watchRead(p)
		}
		u.kmu.Lock()
		if u.changes == changes {
			break
		}
		// The store began or ended a change while p was read: the text
		// read may be one it has replaced since. Look again.
		u.kmu.Unlock()
	}
	if u.known == nil {
		u.known = map[string]Version{}
	}
	before, seen := u.known[p]
	if (seen || !v.Exists) && before.Same(v) {
		u.kmu.Unlock()
		return
	}
	if mine, ok := u.making[p]; ok && mine.Same(v) {
		u.known[p] = v // the store's change, renamed into place
		u.kmu.Unlock()
		return
	}
	u.known[p] = v
	u.kmu.Unlock()
	c := Commit{User: u.name, Path: p, Kind: ChangeEdit, Before: before, After: v}
	if v.Exists {
		c.Text = data
	}
	u.s.opts.OnChange(c)
}
