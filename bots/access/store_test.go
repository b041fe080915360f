package access

import (
	"bytes"
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)

func openTemp(t *testing.T) (*Store, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "state")
	s, err := OpenStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	return s, dir
}

func reopen(t *testing.T, dir string) *Store {
	t.Helper()
	s, err := OpenStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestStoreAllowRevokePersist(t *testing.T) {
	s, dir := openTemp(t)
	u := Entry{Kind: User, ID: "U2", Team: "T1"}
	if added, err := s.Allow(Slack, u, "test", t0); !added || err != nil {
		t.Fatalf("Allow = %v, %v", added, err)
	}
	if added, err := s.Allow(Slack, u, "test", t0); added || err != nil {
		t.Fatalf("second Allow = %v, %v", added, err)
	}
	if fi, err := os.Stat(filepath.Join(dir, FileName)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("file: %v, %v", fi, err)
	}
	s = reopen(t, dir)
	if got := s.Entries(Slack); len(got) != 1 || got[0] != u {
		t.Fatalf("Entries after reopen = %v", got)
	}
	if got := s.Entries(Discord); len(got) != 0 {
		t.Fatalf("Discord entries %v", got)
	}
	allowed, _ := s.List(t0)
	if len(allowed) != 1 || allowed[0].Key() != "slack:T1/U2" || allowed[0].By != "test" || allowed[0].Entry() != u {
		t.Fatalf("List = %+v", allowed)
	}
	if removed, err := s.Revoke(Slack, u); !removed || err != nil {
		t.Fatalf("Revoke = %v, %v", removed, err)
	}
	if removed, err := s.Revoke(Slack, u); removed || err != nil {
		t.Fatalf("second Revoke = %v, %v", removed, err)
	}
	if got := reopen(t, dir).Entries(Slack); len(got) != 0 {
		t.Fatalf("Entries after revoke = %v", got)
	}
}

func TestStorePairing(t *testing.T) {
	s, dir := openTemp(t)
	who := Entry{Kind: User, ID: "42"}
	p, err := s.Issue(Discord, who, "DMs", t0)
	if err != nil || len(p.Code) != codeLen || strings.Trim(p.Code, codeAlphabet) != "" || p.Key() != "discord:user:42" {
		t.Fatalf("Issue = %+v, %v", p, err)
	}
	// The same person within the hour gets the same code.
	if again, err := s.Issue(Discord, who, "DMs", t0.Add(30*time.Minute)); err != nil || again.Code != p.Code {
		t.Fatalf("Issue again = %+v, %v", again, err)
	}
	if _, codes := reopen(t, dir).List(t0); len(codes) != 1 || codes[0].Code != p.Code {
		t.Fatalf("codes after reopen = %+v", codes)
	}
	if _, err := s.Approve("NOPE2345", t0); !errors.Is(err, ErrNoCode) {
		t.Fatalf("Approve of an unknown code: %v", err)
	}
	typed := strings.ToLower(p.Code[:4]) + "-" + p.Code[4:]
	a, err := s.Approve(typed, t0.Add(time.Minute))
	if err != nil || a.Key() != "discord:user:42" || !strings.Contains(a.By, p.Code) {
		t.Fatalf("Approve = %+v, %v", a, err)
	}
	if got := reopen(t, dir).Entries(Discord); len(got) != 1 || got[0] != who {
		t.Fatalf("Entries = %v", got)
	}
	if _, err := s.Approve(p.Code, t0.Add(time.Minute)); !errors.Is(err, ErrNoCode) {
		t.Fatalf("a code is used once: %v", err)
	}
}

func TestStoreExpiredCode(t *testing.T) {
	s, _ := openTemp(t)
	p, err := s.Issue(Slack, Entry{Kind: User, ID: "U9", Team: "T9"}, "team T9", t0)
	if err != nil {
		t.Fatal(err)
	}
	if _, codes := s.List(t0.Add(CodeTTL)); len(codes) != 0 {
		t.Fatalf("an expired code is listed: %+v", codes)
	}
	if _, err := s.Approve(p.Code, t0.Add(CodeTTL)); !errors.Is(err, ErrExpired) {
		t.Fatalf("Approve of an expired code: %v", err)
	}
	if len(s.Entries(Slack)) != 0 {
		t.Fatal("an expired code let someone in")
	}
	if _, err := s.Approve(p.Code, t0.Add(CodeTTL)); !errors.Is(err, ErrNoCode) {
		t.Fatalf("the expired code is dropped: %v", err)
	}
}

func TestStoreTooManyCodes(t *testing.T) {
	s, _ := openTemp(t)
	for i := range MaxPending {
		if _, err := s.Issue(Discord, Entry{Kind: User, ID: "1" + strings.Repeat("0", i%10) + string(rune('1'+i/10))}, "server "+strconv.Itoa(i), t0); err != nil {
			t.Fatal(i, err)
		}
	}
	if _, err := s.Issue(Discord, Entry{Kind: User, ID: "999"}, "server 99", t0); !errors.Is(err, ErrTooMany) {
		t.Fatalf("Issue past MaxPending: %v", err)
	}
	// Another platform has its own; an hour later the old ones are gone.
	if _, err := s.Issue(Slack, Entry{Kind: User, ID: "U1", Team: "T1"}, "team T1", t0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Issue(Discord, Entry{Kind: User, ID: "999"}, "DMs", t0.Add(CodeTTL)); err != nil {
		t.Fatalf("Issue after expiry: %v", err)
	}
	// Allowing a person drops their code.
	p, _ := s.Issue(Slack, Entry{Kind: User, ID: "U1", Team: "T1"}, "team T1", t0)
	if _, err := s.Allow(Slack, Entry{Kind: User, ID: "U1", Team: "T1"}, "test", t0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Approve(p.Code, t0); !errors.Is(err, ErrNoCode) {
		t.Fatalf("code after allow: %v", err)
	}
}

func TestCodesDiffer(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		c := newCode(rand.Reader)
		if seen[c] || len(c) != codeLen {
			t.Fatalf("code %q (seen %v)", c, seen[c])
		}
		seen[c] = true
	}
}

func TestOpenStoreErrors(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, FileName)
	for _, c := range []struct{ body, want string }{
		{"{", "is damaged"},
		{`{"allowed":[{"platform":"slack","id":"nope"}]}`, "allowed[0]"},
		{`{"codes":[{"platform":"discord","id":"x"}]}`, "codes[0]"},
		{`{"extra":1}`, "unknown field"},
	} {
		os.WriteFile(path, []byte(c.body), 0o600)
		if _, err := OpenStore(dir); err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "remove it") {
			t.Errorf("OpenStore(%s) = %v", c.body, err)
		}
	}
	os.Remove(path)
	os.Symlink(filepath.Join(dir, "elsewhere"), path)
	if _, err := OpenStore(dir); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("OpenStore through a link = %v", err)
	}
	os.Remove(path)
	os.Mkdir(path, 0o700)
	if _, err := OpenStore(dir); err == nil {
		t.Error("OpenStore of a folder")
	}
}

// A write that fails changes nothing, and says which file.
func TestStoreWriteFails(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root writes into a read-only folder")
	}
	s, dir := openTemp(t)
	if _, err := s.Allow(Slack, Entry{Kind: Team, ID: "T1"}, "test", t0); err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o500)
	defer os.Chmod(dir, 0o700)
	if _, err := s.Allow(Slack, Entry{Kind: Team, ID: "T2"}, "test", t0); err == nil || !strings.Contains(err.Error(), "access list") {
		t.Fatalf("Allow in a read-only folder: %v", err)
	}
	if got := s.Entries(Slack); len(got) != 1 {
		t.Fatalf("a failed write changed the list: %v", got)
	}
}

// FuzzStateDecode: whatever access.json holds, reading it never panics,
// and what is read is written back and read again the same.
func FuzzStateDecode(f *testing.F) {
	f.Add([]byte(`{"allowed":[{"platform":"slack","id":"T1/U2","added":"2026-11-27T12:00:00Z","by":"x"}],"codes":[{"code":"ABCDEFGH","platform":"discord","id":"user:1","expires":"2026-11-27T13:00:00Z"}]}`))
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"allowed":null}`))
	f.Add([]byte(`[`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var st state
		if err := st.decode(data); err != nil {
			return
		}
		s := &Store{dir: t.TempDir(), st: st, rand: rand.Reader}
		if err := s.save(st.clone()); err != nil {
			t.Fatal(err)
		}
		again, err := OpenStore(s.dir)
		if err != nil {
			t.Fatalf("written back, unreadable: %v", err)
		}
		if len(again.st.Allowed) != len(st.Allowed) || len(again.st.Codes) != len(st.Codes) {
			t.Fatalf("read back %+v, was %+v", again.st, st)
		}
		for i, a := range st.Allowed {
			if again.st.Allowed[i].entry != a.entry {
				t.Fatalf("entry %d: %+v, was %+v", i, again.st.Allowed[i], a)
			}
		}
	})
}

// One source (a Slack team, a Discord server, Discord's DMs) is given at
// most MaxPendingPerSource codes at once: its next stranger is refused
// with ErrTooManyFrom, while a stranger from elsewhere, and one who holds
// a code already, still get theirs. Approving or expiring frees a place;
// the source is kept in the file.
func TestStorePerSource(t *testing.T) {
	s, dir := openTemp(t)
	person := func(i int) Entry { return Entry{Kind: User, ID: strconv.Itoa(100 + i)} }
	var first Pending
	for i := range MaxPendingPerSource {
		p, err := s.Issue(Discord, person(i), "server 1", t0.Add(time.Duration(i)*time.Minute))
		if err != nil {
			t.Fatal(i, err)
		}
		if i == 0 {
			first = p
		}
	}
	if _, err := s.Issue(Discord, person(50), "server 1", t0); !errors.Is(err, ErrTooManyFrom) {
		t.Fatalf("past MaxPendingPerSource: %v", err)
	}
	if p, err := s.Issue(Discord, person(0), "server 1", t0); err != nil || p.Code != first.Code {
		t.Fatalf("a person holding a code: %+v, %v", p, err)
	}
	if _, err := s.Issue(Discord, person(51), "server 2", t0); err != nil {
		t.Fatalf("another server: %v", err)
	}
	if _, err := s.Issue(Slack, Entry{Kind: User, ID: "U1", Team: "T1"}, "server 1", t0); err != nil {
		t.Fatalf("another platform: %v", err)
	}
	if _, err := s.Approve(first.Code, t0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Issue(Discord, person(52), "server 1", t0); err != nil {
		t.Fatalf("after an approval: %v", err)
	}
	if _, err := s.Issue(Discord, person(53), "server 1", t0); !errors.Is(err, ErrTooManyFrom) {
		t.Fatalf("full again: %v", err)
	}
	// An hour on, the code given at t0 (to person 52) has expired.
	if _, err := s.Issue(Discord, person(53), "server 1", t0.Add(CodeTTL)); err != nil {
		t.Fatalf("after an expiry: %v", err)
	}
	again, err := OpenStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, codes := again.List(t0.Add(CodeTTL))
	from := 0
	for _, c := range codes {
		if c.Platform == Discord && c.Source == "server 1" {
			from++
		}
	}
	if from != MaxPendingPerSource {
		t.Fatalf("%d codes from server 1 after a reopen: %+v", from, codes)
	}
}

// A file written before sources were kept reads as codes of no source.
func TestStoreCodesWithoutSource(t *testing.T) {
	dir := t.TempDir()
	body := `{"allowed":[],"codes":[{"code":"ABCDEFGH","platform":"discord","id":"user:7","expires":"2026-11-27T13:00:00Z"}]}`
	if err := os.WriteFile(filepath.Join(dir, FileName), []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := OpenStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, codes := s.List(t0); len(codes) != 1 || codes[0].Source != "" {
		t.Fatalf("codes %+v", codes)
	}
	if p, err := s.Issue(Discord, Entry{Kind: User, ID: "7"}, "DMs", t0); err != nil || p.Code != "ABCDEFGH" {
		t.Fatalf("the old code: %+v, %v", p, err)
	}
}

// Crowded names each full queue once: a platform's, else a source's.
func TestCrowded(t *testing.T) {
	codes := func(platform, source string, n int) []Pending {
		out := make([]Pending, n)
		for i := range out {
			out[i] = Pending{Platform: platform, Source: source}
		}
		return out
	}
	join := func(parts ...[]Pending) []Pending {
		var out []Pending
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	tests := []struct {
		name  string
		codes []Pending
		want  []string
	}{
		{"none", nil, nil},
		{"under both", join(codes(Discord, "DMs", MaxPendingPerSource-1), codes(Slack, "team T1", MaxPendingPerSource-1)), nil},
		{"a source full", join(codes(Discord, "DMs", MaxPendingPerSource), codes(Slack, "DMs", 1)),
			[]string{"discord: 5 codes wait from DMs, the most from one place: more strangers from there are told to ask you instead"}},
		{"an old file's codes", codes(Slack, "", MaxPendingPerSource),
			[]string{"slack: 5 codes wait from an unknown place"}},
		{"a platform full", join(codes(Slack, "team T1", MaxPendingPerSource), codes(Slack, "team T2", MaxPendingPerSource),
			codes(Slack, "team T3", MaxPendingPerSource), codes(Slack, "team T4", MaxPendingPerSource), codes(Discord, "DMs", MaxPendingPerSource)),
			[]string{"slack: the pairing queue is full (20 codes wait): strangers are told to ask you instead until codes are approved or expire",
				"discord: 5 codes wait from DMs"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Crowded(tt.codes)
			if len(got) != len(tt.want) {
				t.Fatalf("Crowded = %q, want %q", got, tt.want)
			}
			for i := range got {
				if !strings.HasPrefix(got[i], tt.want[i]) {
					t.Errorf("line %d: %q, want %q…", i, got[i], tt.want[i])
				}
			}
		})
	}
}

// pattern is a reader that gives its bytes over and over.
type pattern struct {
	b []byte
	i int
}

func (p *pattern) Read(out []byte) (int, error) {
	for k := range out {
		out[k] = p.b[p.i%len(p.b)]
		p.i++
	}
	return len(out), nil
}

// A code takes the bytes under the last whole multiple of the alphabet
// (248) in order, each its letter; 248 and above are drawn again, so that
// every letter is as likely.
func TestCodeFromBytes(t *testing.T) {
	r := &pattern{b: []byte{255, 248, 10, 11, 12, 13, 247, 14, 15, 16, 17, 0, 0, 0, 0, 0}}
	if got, want := newCode(r), codeAlphabet[10:14]+codeAlphabet[247%31:247%31+1]+codeAlphabet[14:17]; got != want {
		t.Fatalf("newCode = %q, want %q", got, want)
	}
	// A store draws its codes from its reader.
	s, _ := openTemp(t)
	s.rand = &pattern{b: []byte{0, 1, 2, 3, 4, 5, 6, 7}}
	if p, err := s.Issue(Slack, Entry{Kind: User, ID: "U1", Team: "T1"}, "team T1", t0); err != nil || p.Code != "ABCDEFGH" {
		t.Fatalf("Issue = %+v, %v", p, err)
	}
}

// The file may be up to 16 MiB: one of exactly that size is read, one a
// byte longer is refused as too large.
func TestStoreFileSizeLimit(t *testing.T) {
	dir := t.TempDir()
	body := []byte(`{"allowed":[{"platform":"slack","id":"U1","added":"2026-11-27T12:00:00Z","by":"test"}],"codes":[]}`)
	exact := append(body, bytes.Repeat([]byte{' '}, maxFile-len(body))...)
	if err := os.WriteFile(filepath.Join(dir, FileName), exact, 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := OpenStore(dir)
	if err != nil || len(s.Entries(Slack)) != 1 {
		t.Fatalf("a file of %d bytes: %v", len(exact), err)
	}
	if err := os.WriteFile(filepath.Join(dir, FileName), append(exact, ' '), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenStore(dir); err == nil || !strings.Contains(err.Error(), "larger than 16777216 bytes") {
		t.Fatalf("a file a byte too large: %v", err)
	}
}
