package core

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeMemory is a Memory whose answers the tests set.
type fakeMemory struct {
	mu        sync.Mutex
	show      string
	showErr   error
	forgetErr error
	panics    bool
	shown     []string
	forgets   []string // "user:path"
}

func (m *fakeMemory) Show(user string) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.panics {
		panic("show broke")
	}
	m.shown = append(m.shown, user)
	return m.show, m.showErr
}

func (m *fakeMemory) Forget(user, path string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.panics {
		panic("forget broke")
	}
	if m.forgetErr != nil {
		return m.forgetErr
	}
	m.forgets = append(m.forgets, user+":"+path)
	return nil
}

func (m *fakeMemory) CheckPath(path string) error {
	name, ok := strings.CutPrefix(path, "facts/")
	if name, md := strings.CutSuffix(name, ".md"); ok && md && name != "" && !strings.ContainsAny(name, "/ .`") ||
		path == "episodes/2026-02.md" {
		return nil
	}
	return errors.New("bad path")
}

func (m *fakeMemory) forgotten() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.forgets...)
}

func newFlow(mem Memory, platform string) (*MemoryFlow, *bytes.Buffer) {
	var buf bytes.Buffer
	return &MemoryFlow{Memory: mem, Confirms: NewConfirms(MaxConfirms, ConfirmTTL), Platform: platform,
		Log: slog.New(slog.NewTextHandler(&buf, nil))}, &buf
}

func TestMemoryFlowHandle(t *testing.T) {
	const confirmLine = "\nPress **Delete** to confirm (within 10 minutes), or **Cancel**."
	for _, c := range []struct {
		name     string
		mem      *fakeMemory
		noMemory bool
		platform string
		cmd      string
		user     string // memory user; "" → the own one
		want     string // exact text, or
		contains []string
		confirm  bool
	}{
		{name: "show", mem: &fakeMemory{show: "# Facts\n- facts/a.md"}, cmd: "", want: "# Facts\n- facts/a.md"},
		{name: "show nothing yet", mem: &fakeMemory{show: " \n"}, cmd: "ls", want: NothingYetText},
		{name: "show error", mem: &fakeMemory{showErr: errors.New("/secret: gone")}, cmd: "show", want: ShowErrorText},
		{name: "show panics", mem: &fakeMemory{panics: true}, cmd: "show", want: BrokenText},
		{name: "no memory", noMemory: true, cmd: "help", want: NoMemoryText},
		{name: "help", mem: &fakeMemory{}, cmd: "help", want: MemoryUsage},
		{name: "unknown", mem: &fakeMemory{}, cmd: "bogus it", want: "I don't know `/memory bogus it`.\n\n" + MemoryUsage},
		{name: "unknown with backticks", mem: &fakeMemory{}, cmd: "a`b", want: "I don't know `` /memory a`b ``.\n\n" + MemoryUsage},
		{name: "forget what", mem: &fakeMemory{}, cmd: "forget", want: ForgetWhichText + "\n\n" + MemoryUsage},
		{name: "forget bad name", mem: &fakeMemory{}, cmd: "forget ../x", want: "`../x` is not a memory file. " + PathGrammar},
		{name: "forget a file", mem: &fakeMemory{}, cmd: "forget `facts/food.md`", confirm: true,
			want: "This deletes `facts/food.md`. It cannot be undone." + confirmLine},
		{name: "forget all", mem: &fakeMemory{}, cmd: "forget ALL", confirm: true,
			want: "This deletes **everything** I remember about you (every fact and episode file). It cannot be undone." + confirmLine},
		{name: "forget linked", mem: &fakeMemory{}, cmd: "forget all", user: "zhangsan", platform: "Slack", confirm: true,
			contains: []string{"\nYour Slack account is linked to the memory user `zhangsan`, so this also deletes what was learned through your other linked accounts.\n"}},
		{name: "forget linked, no platform", mem: &fakeMemory{}, cmd: "forget episodes/2026-02.md", user: "zhangsan", confirm: true,
			contains: []string{"\nYour account is linked to the memory user `zhangsan`", "`episodes/2026-02.md`"}},
		{name: "forget check panics", mem: &fakeMemory{panics: true}, cmd: "forget facts/a.md", want: BrokenText},
	} {
		t.Run(c.name, func(t *testing.T) {
			var mem Memory = c.mem
			if c.noMemory {
				mem = nil
			}
			if c.mem != nil && c.mem.panics {
				mem = panicMemory{}
			}
			f, _ := newFlow(mem, c.platform)
			user := c.user
			if user == "" {
				user = "own"
			}
			ans := f.Handle(ParseCommand(c.cmd), user, "U1", "own")
			if c.want != "" && ans.Text != c.want {
				t.Errorf("text\n got %q\nwant %q", ans.Text, c.want)
			}
			for _, w := range c.contains {
				if !strings.Contains(ans.Text, w) {
					t.Errorf("text %q lacks %q", ans.Text, w)
				}
			}
			if (ans.Confirm != "") != c.confirm || f.Confirms.Len() != map[bool]int{true: 1}[c.confirm] {
				t.Errorf("confirm %q, %d pending", ans.Confirm, f.Confirms.Len())
			}
			if c.mem != nil && len(c.mem.forgotten()) != 0 {
				t.Error("deleted without confirmation")
			}
		})
	}
}

// panicMemory panics, as a broken store might.
type panicMemory struct{}

func (panicMemory) Show(string) (string, error) { panic("show broke") }
func (panicMemory) Forget(string, string) error { panic("forget broke") }
func (panicMemory) CheckPath(string) error      { panic("check broke") }

func TestMemoryFlowButton(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2026, 2, 24, 10, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	mem := &fakeMemory{}
	f, logs := newFlow(mem, "Slack")
	f.Now = clock
	ask := func(target, user string) string {
		t.Helper()
		ans := f.Handle(Command{Kind: CmdForget, Target: target}, user, "U1", "own")
		if ans.Confirm == "" {
			t.Fatalf("no confirmation: %q", ans.Text)
		}
		return ans.Confirm
	}
	tok := ask("facts/food.md", "zhangsan")
	for i, s := range []struct {
		token, asker string
		confirm      bool
		want         string
		wrongUser    bool
		forgotten    int
	}{
		{tok, "U2", true, WrongUserText, true, 0},
		{tok, "U1", true, "Done: I deleted `facts/food.md`.", false, 1},
		{tok, "U1", true, ExpiredText, false, 1},
		{ask("all", "own"), "U1", false, CancelledText, false, 1},
		{ask("all", "own"), "U1", true, "Done: I deleted everything I remembered about you.", false, 2},
		{"0123", "U1", true, ExpiredText, false, 2},
	} {
		text, wrong := f.Button(s.token, s.asker, s.confirm)
		if text != s.want || wrong != s.wrongUser || len(mem.forgotten()) != s.forgotten {
			t.Errorf("step %d: Button = %q, %v; forgotten %v", i, text, wrong, mem.forgotten())
		}
	}
	if got := mem.forgotten(); got[0] != "zhangsan:facts/food.md" || got[1] != "own:" {
		t.Errorf("forgotten %v", got)
	}
	// Expiry.
	tok = ask("facts/a.md", "own")
	mu.Lock()
	now = now.Add(ConfirmTTL + time.Second)
	mu.Unlock()
	if text, _ := f.Button(tok, "U1", true); text != ExpiredText {
		t.Errorf("expired: %q", text)
	}
	// Forget fails, or panics.
	mem.forgetErr = errors.New("facts/b.md: no such file")
	if text, _ := f.Button(ask("facts/b.md", "own"), "U1", true); text != "Sorry, I couldn't delete `facts/b.md`: facts/b.md: no such file" {
		t.Errorf("failed: %q", text)
	}
	mem.forgetErr, mem.panics = nil, true
	tok = ask("facts/c.md", "own")
	if text, _ := f.Button(tok, "U1", true); text != "Sorry, I couldn't delete `facts/c.md`: internal error" {
		t.Errorf("panicked: %q", text)
	}
	if !strings.Contains(logs.String(), "Memory.Forget panicked") || !strings.Contains(logs.String(), "forget failed") {
		t.Errorf("logs %s", logs.String())
	}
	// The memory went away after the question (a misconfigured flow).
	mem.panics = false
	tok = ask("facts/d.md", "own")
	f.Memory = nil
	if text, _ := f.Button(tok, "U1", true); !strings.Contains(text, "couldn't delete") {
		t.Errorf("no memory: %q", text)
	}
}

func TestMemoryFlowDefaults(t *testing.T) {
	// Zero Log and Now work; a short TTL is written as it is.
	f := &MemoryFlow{Memory: &fakeMemory{}, Confirms: NewConfirms(10, 30*time.Second)}
	ans := f.Handle(Command{Kind: CmdForget, Target: "all"}, "u", "U", "u")
	if !strings.Contains(ans.Text, "(within 30 seconds)") {
		t.Errorf("text %q", ans.Text)
	}
	if text, _ := f.Button(ans.Confirm, "U", false); text != CancelledText {
		t.Errorf("button %q", text)
	}
	for _, c := range []struct {
		d    time.Duration
		want string
	}{{time.Second, "1 second"}, {time.Minute, "1 minute"}, {90 * time.Second, "1 minute"}, {2 * time.Hour, "120 minutes"}} {
		if got := minutes(c.d); got != c.want {
			t.Errorf("minutes(%v) = %q", c.d, got)
		}
	}
	for _, c := range []struct{ in, want string }{
		{"x", "`x`"}, {"a`b", "`` a`b ``"}, {"``x```", "```` ``x``` ````"}, {"", "``"},
	} {
		if got := CodeSpan(c.in); got != c.want {
			t.Errorf("CodeSpan(%q) = %q; want %q", c.in, got, c.want)
		}
	}
}
