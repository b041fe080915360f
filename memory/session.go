package memory

import (
	"fmt"
	"strings"
	"sync"

	"github.com/mnemo-agent/mnemo/agent/text"
)

// Session is one caller's view of a user's memory — a task or a reflection.
// It remembers the version of each file it was given or read, which is what
// its writes and patches are based on, so an edit a person saved in between
// is detected instead of overwritten.
type Session struct {
	u      *User
	vis    visPolicy // what its writes may touch (NewView sets it)
	commit CommitHook
	mu     sync.Mutex
	seen   map[string]Version
	src    *attribution // stamps what its writes add (nil: none)
}

// SetSource makes the session's writes stamp what they add or change
// with src (provenance; see Source): a reflection of one turn, a kept
// message. Set it before the first write.
func (s *Session) SetSource(src Source) { s.SetSources([]Said{{Source: src}}) }

// SetSources makes the session's writes stamp each line they add or
// change with the turn of said (a reflection's batch, oldest first) that
// said it (see Attribution). Set it before the first write.
func (s *Session) SetSources(said []Said) { s.src = newAttribution(said) }

// stamping is how the session's writes are stamped (see stamping).
func (s *Session) stamping(touched map[string]bool) *stamping {
	return &stamping{src: s.src, touched: touched}
}

// NewSession starts a session on u.
func (u *User) NewSession() *Session {
	return &Session{u: u, seen: map[string]Version{}}
}

// OnCommit sets the hook told of each change the session's writes make,
// just before it is made (see CommitHook). Set it before the first write.
func (s *Session) OnCommit(h CommitHook) { s.commit = h }

// User is the memory the session works on.
func (s *Session) User() *User { return s.u }

func (s *Session) remember(p string, v Version) {
	s.mu.Lock()
	s.seen[p] = v
	s.mu.Unlock()
}

func (s *Session) base(p string) *Version {
	s.mu.Lock()
	defer s.mu.Unlock()
	if v, ok := s.seen[p]; ok {
		return &v
	}
	return nil
}

// Load reads a whole file and records its version, as a pre-load does.
func (s *Session) Load(p string) (Doc, error) {
	d, err := s.u.Read(p)
	if err != nil {
		return Doc{}, err
	}
	s.remember(p, d.Version)
	return d, nil
}

// Read reads a file for a model: the text without its provenance stamps,
// up to the store's read cap, cut on a line or character boundary with a
// note saying how much was left out.
func (s *Session) Read(p string) (string, error) {
	d, err := s.Load(p)
	if err != nil {
		return "", err
	}
	return capText(StripStamps(d.Text), s.u.s.opts.ReadCap), nil
}

func capText(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := len(text.Cut(s, max))
	for i := cut; i > cut-1024 && i > 0; i-- { // prefer a whole line
		if s[i-1] == '\n' {
			cut = i
			break
		}
	}
	return fmt.Sprintf("%s\n[mnemo: the file is %d bytes; only the first %d are shown, %d bytes were left out]", s[:cut], len(s), cut, len(s)-cut)
}

// Write replaces or creates a fact file, based on the version last seen.
// content is plain text: a stamp in it is dropped, and the lines kept
// keep theirs (stamping).
func (s *Session) Write(p, content string) error {
	v, err := s.u.write(p, StripStamps(StripInvisible(content)), s.base(p), s.commit, s.vis, s.stamping(nil))
	if err == nil {
		s.remember(p, v)
	}
	return err
}

// Patch patches a file, based on the version last seen.
func (s *Session) Patch(p string, patches []Patch) (int, error) {
	clean := make([]Patch, len(patches))
	for i, pt := range patches {
		clean[i] = Patch{OldText: pt.OldText, NewText: StripStamps(StripInvisible(pt.NewText))}
	}
	v, err := s.u.patch(p, clean, s.base(p), s.commit, s.vis, s.stamping(touchedLines(clean)))
	if err != nil {
		return 0, err
	}
	s.remember(p, v)
	return len(patches), nil
}

// Append appends an episode entry. Appending needs no prior read: it never
// changes what is already in the file apart from the summary line.
func (s *Session) Append(p, entry, summary string) error {
	v, err := s.u.appendEntry(p, StripStamps(StripInvisible(entry)), StripInvisible(summary), s.commit, s.vis, s.stamping(nil))
	if err == nil {
		s.remember(p, v)
	}
	return err
}

// Preload gives a reflection what it starts from: the fact files in full
// while they fit factsBudget bytes together (their versions recorded, so
// the reflection may write them without reading again), else their index
// lines; and the index of the episode files, newest first. Each index is
// bounded (the facts' by a quarter of factsBudget, at least
// DefaultIndexBudget; the episodes' by DefaultIndexBudget), its last line counting what was left
// out, so the reflector's request does not grow with the memory. Empty
// parts say "none yet".
func (s *Session) Preload(factsBudget int) (facts, episodes string, err error) {
	l, err := s.u.preloadListing(factsBudget)
	if err != nil {
		return "", "", err
	}
	return preload(s, viewParts{own: l.shown, ownF: l.facts, ownVer: l.ver, factBytes: l.factBytes}, factsBudget)
}

// preload is Preload of any Space whose files are p: its fact files come
// first (p.facts()), their bytes counted when the list was made, so a
// reflection's start does not grow with the number of files.
func preload(s Space, p viewParts, factsBudget int) (facts, episodes string, err error) {
	nf, n := p.facts(), p.len()
	if p.factBytes <= int64(factsBudget) {
		var factFiles []string
		for i := range nf {
			f := p.at(i)
			d, err := s.Load(f.Path)
			if err != nil {
				continue // changed or vanished since the list: the model can still read it
			}
			factFiles = append(factFiles, "### "+f.Path+"\n"+StripStamps(d.Text))
		}
		facts = strings.Join(factFiles, "\n\n")
	} else {
		head := fmt.Sprintf("(The fact files hold more than the %d bytes pre-loaded in full: here is their index. memory_read the ones you need before changing them.)", factsBudget)
		facts = head + "\n" + boundedIndex(nf, p.at, max(factsBudget/4, DefaultIndexBudget)-len(head)-1)
	}
	if nf == 0 {
		facts = "none yet"
	}
	episodes = boundedIndex(n-nf, func(i int) FileInfo { return p.at(nf + i) }, DefaultIndexBudget)
	if episodes == "" {
		episodes = "none yet"
	}
	return facts, episodes, nil
}

// boundedIndex is the index lines of files, in order, within budget bytes
// (a line for at least one file): past it, a last line says how many more
// there are and where to see them.
func boundedIndex(n int, at func(int) FileInfo, budget int) string {
	var b strings.Builder
	for i := range n {
		line := IndexLine(at(i))
		room := budget - b.Len()
		if rest := n - i - 1; rest > 0 {
			room -= omittedLen(rest)
		}
		if i > 0 && len(line)+1 > room {
			b.WriteString("\n" + strings.TrimSuffix(omittedLine(n-i), "\n"))
			break
		}
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(line)
	}
	return b.String()
}

// List lists the session's files (User.List).
func (s *Session) List() ([]FileInfo, error) { return s.u.List() }
