package memory

import (
	"errors"
	"slices"
	"strings"
)

// ChannelDir is the prefix under which a channel's memory shows to the
// tools in that channel: channel/facts/decisions.md.
const ChannelDir = "channel/"

// Space is what the memory tools work on: a Session (one memory, all of
// it, as an admin or a test sees it) or a View (what one task or one
// reflection may see).
type Space interface {
	List() ([]FileInfo, error)
	Load(p string) (Doc, error)
	Read(p string) (string, error)
	Write(p, content string) error
	Patch(p string, patches []Patch) (int, error)
	Append(p, entry, summary string) error
	Search(query string, limit int) (Found, error)
}

var (
	_ Space = (*Session)(nil)
	_ Space = (*View)(nil)
)

// View is a speaker's memory as one conversation may see it, and with a
// channel's memory beside it under ChannelDir. Privacy is what it gives,
// never what the model is asked:
//
//   - private (a DM, the terminal, a channel set to full): every file of
//     the speaker; what its writes make is private, and a shared file is
//     refused (SharedFileError), so a DM's words never reach a channel;
//   - shared (a channel): only the speaker's files whose header says
//     "> Visibility: shared". A private file answers exactly as a missing
//     one, to every tool and path form, and a write never touches it: it
//     goes to the shared file of that name (facts/x.shared.md) unless the
//     name itself is shared, and what it makes is shared.
//
// The channel's own files are all visible in their channel, and nowhere
// else: a View without a channel has no ChannelDir.
type View struct {
	own    *Session
	shared bool
	ch     *Session // nil: no channel
}

// NewView is own's memory as a conversation sees it: shared selects the
// channel rules above; ch is the channel's memory (Store.User of an
// mnemo.ChannelKey), or nil.
func NewView(own *User, shared bool, ch *User) *View {
	v := &View{own: own.NewSession(), shared: shared}
	v.own.vis = visPrivate
	if shared {
		v.own.vis = visShared
	}
	if ch != nil {
		v.ch = ch.NewSession()
	}
	return v
}

// OnCommit sets the hook told of each change the view's writes make,
// just before it is made; a change to the channel's memory names its
// path with ChannelDir. Set it before the first write.
func (v *View) OnCommit(h CommitHook) {
	v.own.OnCommit(h)
	if v.ch != nil && h != nil {
		v.ch.OnCommit(func(c Commit) error {
			c.Path = ChannelDir + c.Path
			return h(c)
		})
	}
}

// Version is the current version of a file as OnCommit named it.
func (v *View) Version(p string) (Version, error) {
	if s, rel, ok := v.channel(p); ok {
		return s.u.Version(rel)
	}
	return v.own.u.Version(p)
}

// channel splits a path of the channel's memory from its prefix.
func (v *View) channel(p string) (*Session, string, bool) {
	if v.ch == nil {
		return nil, "", false
	}
	rel, ok := strings.CutPrefix(p, ChannelDir)
	return v.ch, rel, ok
}

// List is what the view may see: the speaker's fact files, the channel's,
// then the speaker's episode files and the channel's (each newest first).
func (v *View) List() ([]FileInfo, error) {
	p, err := v.parts()
	if err != nil || v.ch == nil {
		return p.own, err
	}
	out := make([]FileInfo, 0, p.len())
	for i := range p.len() {
		out = append(out, p.at(i))
	}
	return out, nil
}

// viewParts is a view's files as the index lists them, without copying
// them: the speaker's (List's order, shared with the index) and the
// channel's, each split where its episodes start, with the listings'
// versions and their fact files' bytes.
type viewParts struct {
	own, ch       []FileInfo
	ownF, chF     int // how many of each are fact files
	ownVer, chVer uint64
	factBytes     int64 // of the fact files of both
}

func (v *View) parts() (viewParts, error) {
	own, err := v.own.u.listing(v.shared)
	if err != nil {
		return viewParts{}, err
	}
	// What the index shows: a roll-up in place of the months it covers.
	p := viewParts{own: own.shown, ownF: own.facts, ownVer: own.ver, factBytes: own.factBytes}
	if v.ch == nil {
		return p, nil
	}
	ch, err := v.ch.u.listing(false)
	if err != nil {
		return viewParts{}, err
	}
	p.ch, p.chF, p.chVer = ch.shown, ch.facts, ch.ver
	p.factBytes += ch.factBytes
	return p, nil
}

func (p viewParts) len() int { return len(p.own) + len(p.ch) }

// facts is how many of the view's files are fact files (they come first).
func (p viewParts) facts() int { return p.ownF + p.chF }

// at is the i-th file of the view's order; a channel's file is named with
// ChannelDir.
func (p viewParts) at(i int) FileInfo {
	var f FileInfo
	switch {
	case i < p.ownF:
		return p.own[i]
	case i < p.ownF+p.chF:
		f = p.ch[i-p.ownF]
	case i < len(p.own)+p.chF:
		return p.own[i-p.chF]
	default:
		f = p.ch[i-len(p.own)]
	}
	f.Path = ChannelDir + f.Path
	return f
}

// Index is the iteration-1 index of what the view may see. It is rendered
// once per version of the files it lists (the watcher's or a write's
// change makes a new one) and kept: a message's index costs a lookup,
// whatever the number of files, and at any size rendering it costs what
// the budget holds, as only the lines it shows are made.
func (v *View) Index(budget int) (string, error) {
	// A start's index from the cache: only the files it shows are checked
	// (indexList); the rest are checked once by whatever lists them all.
	if v.ch == nil && !v.shared && v.own.u.idx.starting() {
		files, err := v.own.u.indexList(budget)
		if err != nil {
			return "", err
		}
		return RenderIndex(foldRollups(files), budget), nil
	}
	p, err := v.parts()
	if err != nil {
		return "", err
	}
	if budget <= 0 {
		budget = DefaultIndexBudget
	}
	k := renderKey{shared: v.shared, budget: budget}
	if v.ch != nil {
		k.ch = v.ch.u.idx
	}
	x := v.own.u.idx
	if text, ok := x.renderedFor(k, p.ownVer, p.chVer); ok {
		return text, nil
	}
	text := renderIndex(p.len(), p.at, budget)
	x.keepRendered(k, p.ownVer, p.chVer, text)
	return text, nil
}

// Preload is Session.Preload of what the view may see.
func (v *View) Preload(factsBudget int) (facts, episodes string, err error) {
	if v.ch == nil && !v.shared {
		return v.own.Preload(factsBudget) // checks only what it shows
	}
	p, err := v.parts()
	if err != nil {
		return "", "", err
	}
	return preload(v, p, factsBudget)
}

// Load reads a whole file the view may see, and records its version.
func (v *View) Load(p string) (Doc, error) {
	if s, rel, ok := v.channel(p); ok {
		d, err := s.Load(rel)
		d.Path = p
		return d, err
	}
	if !v.shared {
		return v.own.Load(p)
	}
	if _, err := ParsePath(p); err != nil {
		return Doc{}, err
	}
	// The name itself when it is shared, else its shared file: a private
	// file and a missing one give the same answer, whatever went wrong.
	for _, c := range slices.Compact([]string{p, SharedName(p)}) {
		d, err := v.own.u.Read(c)
		if err == nil && IsShared(d.Text) {
			v.own.remember(c, d.Version)
			return d, nil
		}
	}
	return Doc{}, notFound(p)
}

// Read reads a file for the model, cut at the store's read cap.
func (v *View) Read(p string) (string, error) {
	d, err := v.Load(p)
	if err != nil {
		return "", err
	}
	return capText(StripStamps(d.Text), v.own.u.s.opts.ReadCap), nil
}

// SetSource makes the view's writes stamp what they add or change with
// src (see Source): in the speaker's files without "by" (they said it),
// in the channel's memory with who said it.
func (v *View) SetSource(src Source) { v.SetSources([]Said{{Source: src}}) }

// SetSources makes the view's writes stamp each line they add or change
// with the turn of said (oldest first) that said it (see Attribution):
// in the speaker's files without "by", in the channel's memory with who
// said that line's turn.
func (v *View) SetSources(said []Said) {
	own := make([]Said, len(said))
	for i, s := range said {
		own[i] = s
		own[i].Source.By = ""
	}
	v.own.SetSources(own)
	if v.ch != nil {
		v.ch.SetSources(said)
	}
}

// target is the session and the path a change to p goes to: in a shared
// view, p itself only when it is a shared file, else its shared file.
func (v *View) target(p string) (*Session, string) {
	if s, rel, ok := v.channel(p); ok {
		return s, rel
	}
	if !v.shared || !validPath(p) || IsRollup(p) {
		return v.own, p // a roll-up: refused as it is named
	}
	if d, err := v.own.u.Read(p); err == nil && IsShared(d.Text) {
		return v.own, p
	}
	return v.own, SharedName(p)
}

// Write replaces or creates a fact file the view may change.
func (v *View) Write(p, content string) error {
	s, t := v.target(p)
	return v.refused(p, s.Write(t, content))
}

// Patch patches a file the view may change.
func (v *View) Patch(p string, patches []Patch) (int, error) {
	s, t := v.target(p)
	n, err := s.Patch(t, patches)
	return n, v.refused(p, err)
}

// Append appends an episode entry to a file the view may change.
func (v *View) Append(p, entry, summary string) error {
	s, t := v.target(p)
	return v.refused(p, s.Append(t, entry, summary))
}

// refused words errNotShared (the shared file of p's name is private now:
// a person made it so) without saying what is in it.
func (v *View) refused(p string, err error) error {
	if errors.Is(err, errNotShared) {
		return &NotWritableError{Path: p}
	}
	return err
}
