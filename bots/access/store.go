package access

import (
	"bytes"
	"cmp"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mnemo-agent/mnemo/memory/durable"
)

// FileName is the Store's file in the state folder.
const FileName = "access.json"

// CodeTTL is how long a pairing code may be approved.
const CodeTTL = time.Hour

// MaxPending bounds the pairing codes waiting for approval, per platform:
// past it a stranger is told to ask later, so that a flood of strangers
// neither grows the file nor buries the codes the operator was told about.
const MaxPending = 20

// MaxPendingPerSource bounds the codes waiting from one source (Who.Source:
// a Slack team, a Discord server, Discord's DMs): a code lasts CodeTTL, so
// this is also how many one place may be given an hour. Twenty strangers
// from one place take this many of MaxPending, not all of them.
const MaxPendingPerSource = 5

// maxFile bounds what is read of the file.
const maxFile = 16 << 20

// codeAlphabet has no 0/O, 1/I/L: a code is read aloud or retyped.
const codeAlphabet = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"

// codeLen letters of 31: about 2^40 codes, an hour each, at most
// MaxPending of them at once.
const codeLen = 8

// Errors of Approve.
var (
	ErrNoCode  = errors.New("no such pairing code")
	ErrExpired = errors.New("the pairing code has expired")
	// ErrTooMany is Issue's error when MaxPending codes wait already.
	ErrTooMany = errors.New("too many pairing codes wait for approval")
	// ErrTooManyFrom is Issue's error when MaxPendingPerSource codes wait
	// from the same source.
	ErrTooManyFrom = errors.New("too many pairing codes wait for approval from the same place")
)

// Allowed is an entry the operator added at run time.
type Allowed struct {
	Platform string    `json:"platform"`
	ID       string    `json:"id"` // Entry.String()
	Added    time.Time `json:"added"`
	By       string    `json:"by"` // "mnemo access allow", "mnemo access approve CODE"
	entry    Entry
}

// Entry is the parsed ID.
func (a Allowed) Entry() Entry { return a.entry }

// Key is "platform:id", as `mnemo access allow` takes it.
func (a Allowed) Key() string { return a.Platform + ":" + a.ID }

// Pending is a pairing code waiting for the operator.
type Pending struct {
	Code     string    `json:"code"`
	Platform string    `json:"platform"`
	ID       string    `json:"id"` // the person: Entry.String()
	Expires  time.Time `json:"expires"`
	// Source is where the person wrote from (Who.Source); files written
	// before it was kept have none, one source of their own.
	Source string `json:"source,omitempty"`
	entry  Entry
}

// Key is "platform:id" of the person the code lets in.
func (p Pending) Key() string { return p.Platform + ":" + p.ID }

// state is the file's content.
type state struct {
	Allowed []Allowed `json:"allowed"`
	Codes   []Pending `json:"codes"`
}

// Store is the operator's run-time list and the pairing codes, kept in
// <state>/access.json (durable.WriteFile: never torn, never written through
// a link). Only the process that holds the data folder's lock changes it
// (mnemo serve, or `mnemo access` while none runs). Safe for concurrent
// use.
type Store struct {
	dir  string
	rand io.Reader // where codes come from: crypto/rand (tests give their own)
	mu   sync.Mutex
	st   state
}

// OpenStore reads dir/access.json (none: empty). A file that cannot be
// read is an error naming it and the fix.
func OpenStore(dir string) (*Store, error) {
	s := &Store{dir: dir, rand: rand.Reader}
	path := s.Path()
	// O_NOFOLLOW: the state folder's files are mnemo's; a link is not.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return s, nil
	case errors.Is(err, syscall.ELOOP):
		return nil, fmt.Errorf("access list %s is a symbolic link; mnemo does not follow links in its state folder: remove it", path)
	case err != nil:
		return nil, fmt.Errorf("access list %s: %w", path, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFile+1))
	if err != nil {
		return nil, fmt.Errorf("access list %s: %w", path, err)
	}
	if err := s.st.decode(data); err != nil {
		return nil, fmt.Errorf("access list %s is damaged (%v); fix it by hand, or remove it (the people approved so far must then be let in again)", path, err)
	}
	return s, nil
}

func (st *state) decode(data []byte) error {
	if len(data) > maxFile {
		return fmt.Errorf("larger than %d bytes", maxFile)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(st); err != nil {
		return err
	}
	for i := range st.Allowed {
		a := &st.Allowed[i]
		e, err := ParseEntry(a.Platform, a.ID)
		if err != nil {
			return fmt.Errorf("allowed[%d]: %w", i, err)
		}
		a.entry = e
	}
	for i := range st.Codes {
		c := &st.Codes[i]
		e, err := ParseEntry(c.Platform, c.ID)
		if err != nil {
			return fmt.Errorf("codes[%d]: %w", i, err)
		}
		c.entry = e
	}
	return nil
}

// Path is the file's path.
func (s *Store) Path() string { return filepath.Join(s.dir, FileName) }

// Entries are platform's entries added at run time.
func (s *Store) Entries(platform string) []Entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Entry
	for _, a := range s.st.Allowed {
		if a.Platform == platform {
			out = append(out, a.entry)
		}
	}
	return out
}

// List is what the file holds: the entries added, and the codes not
// expired at now.
func (s *Store) List(now time.Time) ([]Allowed, []Pending) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var codes []Pending
	for _, c := range s.st.Codes {
		if now.Before(c.Expires) {
			codes = append(codes, c)
		}
	}
	return slices.Clone(s.st.Allowed), codes
}

// Allow adds platform's entry e (by says who: for ls). It reports false
// when e was there already (nothing is written).
func (s *Store) Allow(platform string, e Entry, by string, now time.Time) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.has(platform, e) {
		return false, nil
	}
	next := s.st.clone()
	next.Allowed = append(next.Allowed, Allowed{Platform: platform, ID: e.String(), Added: now.UTC(), By: by, entry: e})
	next.Codes = slices.DeleteFunc(next.Codes, func(c Pending) bool { return c.Platform == platform && c.entry == e })
	return true, s.save(next)
}

func (s *Store) has(platform string, e Entry) bool {
	return slices.ContainsFunc(s.st.Allowed, func(a Allowed) bool { return a.Platform == platform && a.entry == e })
}

// Revoke removes platform's entry e. It reports false when it was not
// there (nothing is written).
func (s *Store) Revoke(platform string, e Entry) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.has(platform, e) {
		return false, nil
	}
	next := s.st.clone()
	next.Allowed = slices.DeleteFunc(next.Allowed, func(a Allowed) bool { return a.Platform == platform && a.entry == e })
	return true, s.save(next)
}

// Issue gives person (Who.Person), writing from source (Who.Source), a
// pairing code valid CodeTTL from now: the one they were given already if
// it is still valid, else a new one. It fails with ErrTooMany when
// MaxPending codes of platform wait, with ErrTooManyFrom when
// MaxPendingPerSource of them come from source.
func (s *Store) Issue(platform string, person Entry, source string, now time.Time) (Pending, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	next := s.st.clone()
	next.Codes = slices.DeleteFunc(next.Codes, func(c Pending) bool { return !now.Before(c.Expires) })
	n, from := 0, 0
	for _, c := range next.Codes {
		if c.Platform != platform {
			continue
		}
		if c.entry == person {
			return c, nil
		}
		n++
		if c.Source == source {
			from++
		}
	}
	if n >= MaxPending {
		return Pending{}, ErrTooMany
	}
	if from >= MaxPendingPerSource {
		return Pending{}, ErrTooManyFrom
	}
	p := Pending{Code: newCode(s.rand), Platform: platform, ID: person.String(), Expires: now.Add(CodeTTL).UTC(), Source: source, entry: person}
	next.Codes = append(next.Codes, p)
	return p, s.save(next)
}

// Crowded says which of the queues of codes (List's, not expired) are
// full, one line each for `mnemo access ls`: a platform's at MaxPending,
// a source's at MaxPendingPerSource. None: nothing is full.
func Crowded(codes []Pending) []string {
	type key struct{ platform, source string }
	perPlatform, perSource := map[string]int{}, map[key]int{}
	var platforms []string
	var sources []key
	for _, c := range codes {
		if perPlatform[c.Platform]++; perPlatform[c.Platform] == MaxPending {
			platforms = append(platforms, c.Platform)
		}
		k := key{c.Platform, c.Source}
		if perSource[k]++; perSource[k] == MaxPendingPerSource {
			sources = append(sources, k)
		}
	}
	var out []string
	for _, p := range platforms {
		out = append(out, fmt.Sprintf("%s: the pairing queue is full (%d codes wait): strangers are told to ask you instead until codes are approved or expire", p, MaxPending))
	}
	for _, k := range sources {
		if perPlatform[k.platform] >= MaxPending {
			continue // said above
		}
		out = append(out, fmt.Sprintf("%s: %d codes wait from %s, the most from one place: more strangers from there are told to ask you instead", k.platform, MaxPendingPerSource, cmp.Or(k.source, "an unknown place")))
	}
	return out
}

// newCode is codeLen letters of codeAlphabet from r (crypto/rand).
// Bytes past the last whole multiple of the alphabet are drawn again, so
// that every letter is as likely.
func newCode(r io.Reader) string {
	const limit = 256 / len(codeAlphabet) * len(codeAlphabet)
	code := make([]byte, 0, codeLen)
	var b [16]byte
	for len(code) < codeLen {
		_, _ = io.ReadFull(r, b[:]) // crypto/rand never fails
		for _, c := range b {
			if int(c) < limit && len(code) < codeLen {
				code = append(code, codeAlphabet[int(c)%len(codeAlphabet)])
			}
		}
	}
	return string(code)
}

// NormalCode is code as a person may type it: any case, spaces and
// dashes ignored.
func NormalCode(code string) string {
	return strings.ToUpper(strings.NewReplacer(" ", "", "-", "").Replace(strings.TrimSpace(code)))
}

// Approve lets in the person code was issued to (by "mnemo access approve
// CODE"). An unknown code is ErrNoCode, an expired one ErrExpired (and is
// dropped).
func (s *Store) Approve(code string, now time.Time) (Allowed, error) {
	code = NormalCode(code)
	s.mu.Lock()
	defer s.mu.Unlock()
	i := slices.IndexFunc(s.st.Codes, func(c Pending) bool { return c.Code == code })
	if i < 0 {
		return Allowed{}, ErrNoCode
	}
	c := s.st.Codes[i]
	next := s.st.clone()
	next.Codes = slices.Delete(next.Codes, i, i+1)
	if !now.Before(c.Expires) {
		if err := s.save(next); err != nil {
			return Allowed{}, err
		}
		return Allowed{}, fmt.Errorf("%w (at %s)", ErrExpired, c.Expires.Format(time.RFC3339))
	}
	a := Allowed{Platform: c.Platform, ID: c.ID, Added: now.UTC(), By: "mnemo access approve " + c.Code, entry: c.entry}
	if !s.has(c.Platform, c.entry) {
		next.Allowed = append(next.Allowed, a)
	}
	return a, s.save(next)
}

func (st state) clone() state {
	return state{Allowed: slices.Clone(st.Allowed), Codes: slices.Clone(st.Codes)}
}

// save writes next to the file, then makes it the Store's: a failed write
// changes nothing.
func (s *Store) save(next state) error {
	if next.Allowed == nil {
		next.Allowed = []Allowed{}
	}
	if next.Codes == nil {
		next.Codes = []Pending{}
	}
	data, _ := json.MarshalIndent(next, "", "  ") // strings and times only
	data = append(data, '\n')
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return fmt.Errorf("access list %s: %w", s.Path(), err)
	}
	if err := durable.WriteFile(durable.Dir(s.dir), FileName, data, durable.WriteOptions{Perm: 0o600}); err != nil {
		return fmt.Errorf("access list: %w", err)
	}
	s.st = next
	return nil
}
