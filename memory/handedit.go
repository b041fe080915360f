package memory

// own notes v as the version of p this store is making (or made): an
// event for it is not a hand edit.
func (u *User) own(p string, v Version) {
	u.kmu.Lock()
	defer u.kmu.Unlock()
	if u.known == nil {
		u.known = map[string]Version{}
	}
	u.known[p] = v
}

// noticeEdit is the watcher's look at p after an event: when its version
// is neither what this store wrote nor what was last seen, someone else
// changed it, and Options.OnChange is told (ChangeEdit, with the new
// text). An empty file is a save in progress (editors truncate, then
// write): the event of the write that follows tells.
func (u *User) noticeEdit(p string) {
	root, ref, err := u.openRoot(false)
	if err != nil || root == nil {
		return
	}
	defer ref.release()
	data, v, err := currentVersion(root, p)
	if err != nil || (v.Exists && v.Size == 0) {
		return
	}
	u.kmu.Lock()
	if u.known == nil {
		u.known = map[string]Version{}
	}
	before, seen := u.known[p]
	if (seen || !v.Exists) && before.Same(v) {
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
