package memorycmd

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mnemo-agent/mnemo"
)

// fakeMemory is a Memory whose answers the tests set.
type fakeMemory struct {
	mu        sync.Mutex
	show      string
	showErr   error
	forgetErr error
	setErr    error
	panics    bool
	shown     []string // "user|channel"
	forgets   []string // "user:path"
	// files is whose files exist and whether each is shared:
	// "user:path" → shared.
	files  map[string]bool
	why    string
	whyErr error
	whys   []string // "user|channel|query|inChannel"
}

func (m *fakeMemory) Why(user, channel, query string, inChannel bool) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.whys = append(m.whys, fmt.Sprintf("%s|%s|%s|%v", user, channel, query, inChannel))
	return m.why, m.whyErr
}

func (m *fakeMemory) Show(user, channel string) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.panics {
		panic("show broke")
	}
	m.shown = append(m.shown, user+"|"+channel)
	return m.show, m.showErr
}

func (m *fakeMemory) SetShared(user, path string, shared bool) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.setErr != nil {
		return false, m.setErr
	}
	was, ok := m.files[user+":"+path]
	if !ok {
		return false, fmt.Errorf("%s: no such memory file (%w)", path, fs.ErrNotExist)
	}
	m.files[user+":"+path] = shared
	return was != shared, nil
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

func newFlow(mem Memory, platform string) (*Flow, *bytes.Buffer) {
	var buf bytes.Buffer
	return &Flow{Memory: mem, Confirms: NewConfirms(MaxConfirms, ConfirmTTL), Platform: platform,
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
		{name: "help", mem: &fakeMemory{}, cmd: "help", want: Usage},
		{name: "unknown", mem: &fakeMemory{}, cmd: "bogus it", want: "I don't know `/memory bogus it`.\n\n" + Usage},
		{name: "unknown with backticks", mem: &fakeMemory{}, cmd: "a`b", want: "I don't know `` /memory a`b ``.\n\n" + Usage},
		{name: "forget what", mem: &fakeMemory{}, cmd: "forget", want: ForgetWhichText + "\n\n" + Usage},
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
			ans := f.Handle(Parse(c.cmd), Asker{ID: "U1", User: user, Own: "own"})
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

func (panicMemory) Show(string, string) (string, error) { panic("show broke") }
func (panicMemory) Forget(string, string) error         { panic("forget broke") }
func (panicMemory) CheckPath(string) error              { panic("check broke") }
func (panicMemory) Why(string, string, string, bool) (string, error) {
	panic("why broke")
}
func (panicMemory) SetShared(string, string, bool) (bool, error) {
	panic("set shared broke")
}

func TestMemoryFlowButton(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2026, 2, 24, 10, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	mem := &fakeMemory{}
	f, logs := newFlow(mem, "Slack")
	f.Now = clock
	ask := func(target, user string) string {
		t.Helper()
		ans := f.Handle(Command{Kind: Forget, Target: target}, Asker{ID: "U1", User: user, Own: "own"})
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
	// Nothing to forget: Memory's own words.
	mem.forgetErr = fmt.Errorf("There was nothing to forget: I have no file facts/b.md about you.%w", wrapNothing{})
	if text, _ := f.Button(ask("facts/b.md", "own"), "U1", true); text != "There was nothing to forget: I have no file facts/b.md about you." {
		t.Errorf("nothing to forget: %q", text)
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
	f := &Flow{Memory: &fakeMemory{}, Confirms: NewConfirms(10, 30*time.Second)}
	ans := f.Handle(Command{Kind: Forget, Target: "all"}, Asker{ID: "U", User: "u", Own: "u"})
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

// /memory share and /memory private flip one of the asker's own files and
// say what changed; a bad name answers with the grammar and a missing file
// says so, with nothing changed; another person's file is never touched,
// whatever the text names.
func TestMemoryFlowShare(t *testing.T) {
	const (
		nowShared  = " is now shared with channels: I may use it in any channel you talk to me in."
		nowPrivate = " is now private: I use it only when we talk in private, never in a channel."
	)
	mem := &fakeMemory{files: map[string]bool{"ann:facts/food.md": false, "ann:episodes/2026-02.md": true, "bob:facts/bob.md": false}}
	f, logs := newFlow(mem, "Slack")
	ann := Asker{ID: "U1", User: "ann", Own: "ann", Channel: "#slack-T1-C1"}
	for i, s := range []struct {
		cmd   string
		want  string
		files map[string]bool // after the command
	}{
		{"share", "Say which file to share, e.g. `/memory share facts/food.md`; `/memory` lists yours.", nil},
		{"private", "Say which file to make private, e.g. `/memory private facts/food.md`; `/memory` lists yours.", nil},
		{"share ../bob/facts/bob.md", "`../bob/facts/bob.md` is not a memory file. " + ShareGrammar, nil},
		{"private all", "`all` is not a memory file. " + ShareGrammar, nil},
		{"share facts/bob.md", "You have no memory file `facts/bob.md`; `/memory` lists yours. Nothing was changed.", nil},
		{"share `facts/food.md`", "`facts/food.md`" + nowShared, map[string]bool{"ann:facts/food.md": true}},
		{"share facts/food.md", "`facts/food.md` was already shared with channels: I may use it in any channel you talk to me in.", nil},
		{"private facts/food.md", "`facts/food.md`" + nowPrivate, map[string]bool{"ann:facts/food.md": false}},
		{"private facts/food.md", "`facts/food.md` was already private: I use it only when we talk in private, never in a channel.", nil},
		{"private episodes/2026-02.md", "`episodes/2026-02.md`" + nowPrivate, map[string]bool{"ann:episodes/2026-02.md": false}},
	} {
		want := map[string]bool{"ann:facts/food.md": mem.files["ann:facts/food.md"], "ann:episodes/2026-02.md": mem.files["ann:episodes/2026-02.md"], "bob:facts/bob.md": false}
		for k, v := range s.files {
			want[k] = v
		}
		ans := f.Handle(Parse(s.cmd), ann)
		if ans.Text != s.want || ans.Confirm != "" {
			t.Errorf("step %d, /memory %s:\n got %q\nwant %q", i, s.cmd, ans.Text, s.want)
		}
		if fmt.Sprint(mem.files) != fmt.Sprint(want) {
			t.Errorf("step %d, /memory %s: files %v; want %v", i, s.cmd, mem.files, want)
		}
	}
	if f.Confirms.Len() != 0 || len(mem.forgotten()) != 0 || len(mem.shown) != 0 {
		t.Error("share asked for a confirmation, deleted or showed something")
	}
	if !strings.Contains(logs.String(), "memory visibility changed at the user's request") || !strings.Contains(logs.String(), "memory_user=ann") {
		t.Errorf("logs %s", logs.String())
	}

	// The store fails: a polite text, the error in the log only.
	mem.setErr = errors.New("rename /srv/data/memory/ann/facts/food.md: read-only file system")
	ans := f.Handle(Parse("share facts/food.md"), ann)
	if ans.Text != "Sorry, I couldn't change `facts/food.md` just now; nothing was changed. Please try again later." {
		t.Errorf("error: %q", ans.Text)
	}
	if !strings.Contains(logs.String(), "/memory share failed") || !strings.Contains(logs.String(), "read-only file system") {
		t.Errorf("the error is not logged: %s", logs.String())
	}
	// A panic in the store is the broken text.
	f.Memory = panicMemory{}
	if ans := f.Handle(Parse("private facts/food.md"), ann); ans.Text != BrokenText {
		t.Errorf("panic: %q", ans.Text)
	}
	if ans := f.Handle(Parse("why food"), ann); ans.Text != BrokenText {
		t.Errorf("panic in why: %q", ans.Text)
	}
	// No log: discarded.
	mem.setErr = nil
	if got := SetVisibility(mem, "bob", "facts/bob.md", true, nil); got != "`facts/bob.md`"+nowShared || !mem.files["bob:facts/bob.md"] {
		t.Errorf("SetVisibility without a log: %q, %v", got, mem.files)
	}
}

// /memory in a channel shows the channel's memory too (the key the
// adapter gives), in a DM only the person's; where channels use no memory
// the channel's is not asked for. The channelMemory setting adds what it
// means for private and shared files.
func TestMemoryFlowShowChannel(t *testing.T) {
	mem := &fakeMemory{show: "- [private] facts/food.md", files: map[string]bool{"ann:facts/food.md": false}}
	for _, c := range []struct {
		setting, channel string
		shown            string
		note             string
	}{
		{"", "#slack-T1-C1", "ann|#slack-T1-C1", ""},
		{mnemo.ChannelMemoryRead, "#discord-20", "ann|#discord-20", ""},
		{mnemo.ChannelMemoryRead, "", "ann|", ""},
		{mnemo.ChannelMemoryFull, "#slack-T1-C1", "ann|#slack-T1-C1", "\n\n" + FullNote},
		{mnemo.ChannelMemoryOff, "#slack-T1-C1", "ann|", "\n\n" + OffNote},
	} {
		mem.shown = nil
		f, _ := newFlow(mem, "")
		f.ChannelMemory = c.setting
		a := Asker{ID: "U1", User: "ann", Own: "ann", Channel: c.channel}
		if ans := f.Handle(Command{Kind: Show}, a); ans.Text != mem.show+c.note {
			t.Errorf("%s %q: %q", c.setting, c.channel, ans.Text)
		}
		if len(mem.shown) != 1 || mem.shown[0] != c.shown {
			t.Errorf("%s %q: shown %v; want %s", c.setting, c.channel, mem.shown, c.shown)
		}
		want := "`facts/food.md` was already private: I use it only when we talk in private, never in a channel." + c.note
		if ans := f.Handle(Parse("private facts/food.md"), a); ans.Text != want {
			t.Errorf("%s: %q; want %q", c.setting, ans.Text, want)
		}
	}
	// Nothing about the person: the usual text, with the note.
	mem.show = "\n"
	f, _ := newFlow(mem, "")
	f.ChannelMemory = mnemo.ChannelMemoryFull
	if ans := f.Handle(Command{Kind: Show}, Asker{ID: "U1", User: "ann"}); ans.Text != NothingYetText+"\n\n"+FullNote {
		t.Errorf("nothing: %q", ans.Text)
	}
}

// wrapNothing is fs.ErrNotExist, said as nothing.
type wrapNothing struct{}

func (wrapNothing) Error() string { return "" }

func (wrapNothing) Unwrap() error { return fs.ErrNotExist }

// /memory why asks the memory with the asker's user and where they ask:
// in any channel only what it may see (inChannel), a channel whose memory
// is off without its memory; the words are the command's.
func TestWhy(t *testing.T) {
	for _, tc := range []struct {
		name, mode, channel, words string
		err                        error
		want, call                 string
	}{
		{"dm", "", "", "Berlin flat", nil, "found", "ann||Berlin flat|false"},
		{"channel", mnemo.ChannelMemoryRead, "#slack-T1-C1", "Berlin", nil, "found", "ann|#slack-T1-C1|Berlin|true"},
		{"trusted channel: still only what is shared", mnemo.ChannelMemoryFull, "#slack-T1-C1", "Berlin", nil, "found", "ann|#slack-T1-C1|Berlin|true"},
		{"channel with memory off", mnemo.ChannelMemoryOff, "#slack-T1-C1", "Berlin", nil, "found", "ann||Berlin|true"},
		{"no words", "", "", "", nil, WhyWhatText, ""},
		{"broken store", "", "", "x", errors.New("disk"), WhyErrorText, "ann||x|false"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := &fakeMemory{why: "found", whyErr: tc.err}
			f := &Flow{Memory: mem, ChannelMemory: tc.mode}
			cmd := Parse("why " + tc.words)
			if cmd.Kind != Why || cmd.Target != tc.words {
				t.Fatalf("Parse = %+v", cmd)
			}
			got := f.Handle(cmd, Asker{ID: "U1", User: "ann", Own: "ann", Channel: tc.channel})
			if !strings.HasPrefix(got.Text, tc.want) {
				t.Errorf("answer %q, want %q", got.Text, tc.want)
			}
			want := []string{}
			if tc.call != "" {
				want = []string{tc.call}
			}
			if fmt.Sprint(mem.whys) != fmt.Sprint(want) {
				t.Errorf("calls %v, want %v", mem.whys, want)
			}
		})
	}
}

// Where there are no buttons (Flow.Typed, the terminal) the texts say to
// type ConfirmWord, and Confirm deletes what was asked, once, saying what
// it deleted; an unknown token deletes nothing.
func TestMemoryFlowTyped(t *testing.T) {
	mem := &fakeMemory{}
	f, _ := newFlow(mem, "")
	f.Typed = true
	own := Asker{ID: "ann", User: "ann", Own: "ann"}
	for _, c := range []struct{ cmd, want string }{
		{"help", TypedUsage},
		{"bogus", "I don't know `/memory bogus`.\n\n" + TypedUsage},
		{"forget", ForgetWhichText + "\n\n" + TypedUsage},
	} {
		if ans := f.Handle(Parse(c.cmd), own); ans.Text != c.want || ans.Confirm != "" {
			t.Errorf("/memory %s: %q", c.cmd, ans.Text)
		}
	}
	if !strings.HasSuffix(TypedUsage, "Nothing is deleted until you confirm with **/forget yes**.") || strings.Contains(TypedUsage, "button") {
		t.Errorf("TypedUsage %q", TypedUsage)
	}
	ans := f.Handle(Parse("forget facts/food.md"), own)
	if want := "This deletes `facts/food.md`. It cannot be undone.\nType **/forget yes** to confirm (within 10 minutes); anything else cancels."; ans.Text != want || ans.Confirm == "" {
		t.Fatalf("ask: %q", ans.Text)
	}
	text, forgot := f.Confirm(ans.Confirm, "ann")
	if text != "Done: I deleted `facts/food.md`." || forgot == nil || forgot.Path != "facts/food.md" || forgot.User != "ann" {
		t.Errorf("confirm: %q, %+v", text, forgot)
	}
	if text, forgot := f.Confirm(ans.Confirm, "ann"); text != ExpiredText || forgot != nil {
		t.Errorf("again: %q, %+v", text, forgot)
	}
	// Nothing to forget: what else was kept of it went all the same.
	mem.forgetErr = fmt.Errorf("There was nothing to forget.%w", wrapNothing{})
	ans = f.Handle(Parse("forget all"), own)
	if text, forgot := f.Confirm(ans.Confirm, "ann"); text != "There was nothing to forget." || forgot == nil || forgot.Path != "" {
		t.Errorf("nothing: %q, %+v", text, forgot)
	}
	if got := mem.forgotten(); len(got) != 1 || got[0] != "ann:facts/food.md" {
		t.Errorf("forgotten %v", got)
	}
}
