package slack

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/mnemo-agent/mnemo/agent/clock/clocktest"
	"github.com/mnemo-agent/mnemo/bots/access"
	"github.com/mnemo-agent/mnemo/bots/internal/bottest"
	"github.com/mnemo-agent/mnemo/bots/internal/memorycmd"
	plat "github.com/mnemo-agent/mnemo/bots/platform"
	"github.com/mnemo-agent/mnemo/bots/slack/slacktest"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden files in testdata")

const (
	homeUser = "slack-T0TEAM-U0USER"
	homeKey  = "T0TEAM/U0USER"
)

// homeMemory is bottest.Memory with what the App Home tab reads: each
// user's files (their visibility is bottest.Memory's Files, a forgotten
// file or user is gone), entries and search results.
type homeMemory struct {
	*bottest.Memory
	mu      sync.Mutex
	files   map[string][]plat.HomeFile // by memory user
	entries map[string][]plat.HomeEntry
	hits    []plat.HomeHit
	err     error // Home fails with it
	panics  bool
	homes   []string // users asked for
	queries []string // "user|query|limit"
	// changed is told of a change at once, as the app's store tells
	// Bot.MemoryChanged from inside the change.
	changed func(user string)
}

func (m *homeMemory) SetShared(user, path string, shared bool) (bool, error) {
	ok, err := m.Memory.SetShared(user, path, shared)
	if m.changed != nil && ok {
		m.changed(user)
	}
	return ok, err
}

func (m *homeMemory) Forget(user, path string) error {
	err := m.Memory.Forget(user, path)
	if m.changed != nil {
		m.changed(user)
	}
	return err
}

func (m *homeMemory) Home(user string) (plat.Home, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.homes = append(m.homes, user)
	if m.panics {
		panic("disk on fire")
	}
	if m.err != nil {
		return plat.Home{}, m.err
	}
	gone := map[string]bool{}
	for _, f := range m.Forgotten() {
		gone[f] = true
	}
	var h plat.Home
	if gone[user+":"] {
		return h, nil
	}
	for _, f := range m.files[user] {
		if gone[user+":"+f.Path] {
			continue
		}
		f.Shared = m.IsShared(user + ":" + f.Path)
		h.Files = append(h.Files, f)
	}
	h.Entries = m.entries[user]
	return h, nil
}

func (m *homeMemory) SearchHome(user, query string, limit int) ([]plat.HomeHit, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.queries = append(m.queries, fmt.Sprintf("%s|%s|%d", user, query, limit))
	if query == "fail" {
		return nil, errors.New("/secret/index: broken")
	}
	return m.hits, nil
}

func (m *homeMemory) asked() (homes, queries []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.homes...), append([]string(nil), m.queries...)
}

// homeSetup is a harness whose memory has the App Home's reads, with ann's
// (U0USER's) two files and an entry, bob's (U0OTHER's) one file.
func homeSetup(t *testing.T, s setup) (*harness, *homeMemory) {
	t.Helper()
	var hm *homeMemory
	config := s.config
	s.config = func(c *Config) {
		hm = &homeMemory{Memory: c.Memory.(*bottest.Memory), files: map[string][]plat.HomeFile{
			homeUser: {
				{Path: "facts/food.md", Summary: "what Ann eats", Size: 120, Fact: true, Lines: []string{"- Likes ramen", "- No <!channel> & no cilantro"}, MoreLines: 2},
				{Path: "episodes/2026-02.md", Summary: "logger fix, short ID", Size: 1300},
			},
			"slack-T0TEAM-U0OTHER": {{Path: "facts/bob.md", Summary: "Bob's secrets", Size: 10, Fact: true}},
		}, entries: map[string][]plat.HomeEntry{
			homeUser: {{Path: "episodes/2026-02.md", Date: "2026-02-14", Title: "Logger fix", Summary: "short IDs in the log"}},
		}}
		hm.Memory.Files = map[string]bool{homeUser + ":facts/food.md": false, homeUser + ":episodes/2026-02.md": true, "slack-T0TEAM-U0OTHER:facts/bob.md": false}
		c.Memory = hm
		if config != nil {
			config(c)
		}
	}
	// A clock that stands still unless the test moves it: a refresh waits
	// for homeEvery only where the test says it passes.
	bot := s.bot
	s.bot = func(b *Bot) {
		b.home.clock = clocktest.New(time.Date(2026, 2, 14, 9, 0, 0, 0, time.UTC))
		if bot != nil {
			bot(b)
		}
	}
	hs := start(t, s)
	hm.changed = hs.bot.MemoryChanged
	return hs, hm
}

// views waits for n views published for user and returns the last.
func (hs *harness) view(t *testing.T, user string, n int) slacktest.View {
	t.Helper()
	vs, err := hs.srv.WaitViews(user, n, wait)
	if err != nil {
		t.Fatal(err)
	}
	return vs[n-1]
}

// viewText is every text of a view's blocks, and its buttons as
// "action_id=value".
func viewText(t *testing.T, v slacktest.View) (text string, buttons []string) {
	t.Helper()
	var blocks []struct {
		Type string `json:"type"`
		Text *struct {
			Text string `json:"text"`
		} `json:"text"`
		Elements []struct {
			Type     string `json:"type"`
			Text     any    `json:"text"`
			ActionID string `json:"action_id"`
			Value    string `json:"value"`
		} `json:"elements"`
	}
	if err := json.Unmarshal(v.Blocks, &blocks); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, bl := range blocks {
		if bl.Text != nil {
			b.WriteString(bl.Text.Text + "\n")
		}
		for _, e := range bl.Elements {
			if s, ok := e.Text.(string); ok {
				b.WriteString(s + "\n")
			}
			if e.Type == "button" {
				buttons = append(buttons, e.ActionID+"="+e.Value)
			}
		}
	}
	return b.String(), buttons
}

// Opening the Home tab publishes the person's own memory: each file with
// its summary, first lines and visibility, Share / Make private / Forget
// buttons, the newest entries and the search box; nothing of anyone else.
// The rendered view is the golden file bots/README.md shows.
func TestHomeOpen(t *testing.T) {
	hs, hm := homeSetup(t, setup{})
	env := hs.srv.AppHomeOpened("U0USER", "home")
	v := hs.view(t, "U0USER", 1)
	if ack, err := hs.srv.WaitAck(env.ID, wait); err != nil || len(ack.Payload) != 0 {
		t.Fatalf("ack %+v, %v", ack, err)
	}
	if v.Type != "home" || v.PrivateMetadata != homeKey {
		t.Errorf("view %+v", v)
	}
	text, buttons := viewText(t, v)
	for _, want := range []string{"What I remember about you", "*`facts/food.md`* · private · 120 B", "what Ann eats", ">- Likes ramen",
		"&lt;!channel&gt; &amp; no cilantro", "… 2 more lines, use `/memory`", "*`episodes/2026-02.md`* · shared · 1.3 KB",
		"• 2026-02-14 Logger fix — short IDs in the log (`episodes/2026-02.md`)"} {
		if !strings.Contains(text, want) {
			t.Errorf("the view lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "bob") || strings.Contains(text, "<!channel>") {
		t.Errorf("the view shows someone else's memory or pings:\n%s", text)
	}
	want := "mnemo_home_share=facts/food.md mnemo_home_forget=facts/food.md mnemo_home_private=episodes/2026-02.md mnemo_home_forget=episodes/2026-02.md mnemo_home_forget=all"
	if strings.Join(buttons, " ") != want {
		t.Errorf("buttons %v", buttons)
	}
	if !bytes.Contains(v.Blocks, []byte(`"dispatch_action":true`)) || !bytes.Contains(v.Blocks, []byte(`"action_id":"mnemo_home_search"`)) {
		t.Errorf("no search box: %s", v.Blocks)
	}
	if homes, _ := hm.asked(); len(homes) != 1 || homes[0] != homeUser {
		t.Errorf("memory read for %v", homes)
	}
	golden(t, "home_view.json", v.Raw)

	// The messages tab publishes nothing; neither does a malformed user.
	hs.srv.AppHomeOpened("U0USER", "messages")
	hs.srv.AppHomeOpened("../x", "home")
	hs.quiet(t, 0)
	if vs := hs.srv.Views(""); len(vs) != 1 {
		t.Errorf("%d views", len(vs))
	}
}

// golden compares got (JSON) with testdata/name, indented; -update rewrites it.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	var buf bytes.Buffer
	if err := json.Indent(&buf, got, "", "  "); err != nil {
		t.Fatal(err)
	}
	buf.WriteString("\n")
	path := filepath.Join("testdata", name)
	if *updateGolden {
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to write it)", err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Errorf("%s differs from what is rendered (run with -update to rewrite it):\n%s", path, buf.String())
	}
}

// The buttons do what /memory share, private and forget do, through the
// same flow: the answer shows at the top of the tab, a forget asks first
// (Delete / Cancel) and deletes once.
func TestHomeButtons(t *testing.T) {
	hs, hm := homeSetup(t, setup{})
	hs.srv.AppHomeOpened("U0USER", "home")
	v := hs.view(t, "U0USER", 1)
	n := 1
	pressed := func(action, value string) (string, []string) {
		t.Helper()
		hs.srv.PressHome(slacktest.HomeAction{User: "U0USER", View: v, ActionID: action, Value: value})
		n++
		v = hs.view(t, "U0USER", n)
		return viewText(t, v)
	}
	text, buttons := pressed(actionHomeShare, "facts/food.md")
	if !hm.IsShared(homeUser+":facts/food.md") || !strings.Contains(text, "`facts/food.md` is now shared with channels") ||
		!strings.Contains(strings.Join(buttons, " "), "mnemo_home_private=facts/food.md") {
		t.Errorf("share: %v\n%s", buttons, text)
	}
	if text, _ = pressed(actionHomePrivate, "facts/food.md"); hm.IsShared(homeUser+":facts/food.md") || !strings.Contains(text, "is now private") {
		t.Errorf("private:\n%s", text)
	}
	text, buttons = pressed(actionHomeForget, "facts/food.md")
	token := ""
	for _, b := range buttons {
		if v, ok := strings.CutPrefix(b, actionHomeConfirm+"="); ok {
			token = v
		}
	}
	if token == "" || !strings.Contains(text, "This deletes `facts/food.md`. It cannot be undone.") || len(hm.Forgotten()) != 0 {
		t.Fatalf("forget asks: %v\n%s", buttons, text)
	}
	if text, buttons = pressed(actionHomeCancel, token); !strings.Contains(text, memorycmd.CancelledText) || len(hm.Forgotten()) != 0 ||
		strings.Contains(strings.Join(buttons, " "), actionHomeConfirm) {
		t.Errorf("cancel: %v\n%s", buttons, text)
	}
	_, buttons = pressed(actionHomeForget, "facts/food.md")
	token = strings.TrimPrefix(buttons[0], actionHomeConfirm+"=")
	text, _ = pressed(actionHomeConfirm, token)
	if got := hm.Forgotten(); len(got) != 1 || got[0] != homeUser+":facts/food.md" ||
		!strings.Contains(text, "Done: I deleted `facts/food.md`.") || strings.Contains(text, "*`facts/food.md`*") {
		t.Errorf("delete: %v\n%s", got, text)
	}
	// Used once.
	if text, _ = pressed(actionHomeConfirm, token); !strings.Contains(text, "This confirmation has expired or was already used") || len(hm.Forgotten()) != 1 {
		t.Errorf("again:\n%s", text)
	}
	// A bad name answers with the grammar; everything asks as /memory forget all.
	hs.srv.PressHome(slacktest.HomeAction{User: "U0USER", View: v, ActionID: "other"}) // not the tab's: nothing
	if text, _ = pressed(actionHomeShare, "../bob/facts/bob.md"); !strings.Contains(text, "is not a memory file") {
		t.Errorf("bad path:\n%s", text)
	}
	if text, _ = pressed(actionHomeForget, "../x"); !strings.Contains(text, "is not a memory file") || strings.Contains(text, "Delete") {
		t.Errorf("forget a bad path:\n%s", text)
	}
	if text, _ = pressed(actionHomeForget, "all"); !strings.Contains(text, "This deletes *everything* I remember about you") {
		t.Errorf("forget all:\n%s", text)
	}
	if sets := hm.Sets(); strings.Join(sets, " ") != homeUser+":facts/food.md:shared "+homeUser+":facts/food.md:private" {
		t.Errorf("sets %v", sets)
	}
}

// Only the person themself can press their tab's buttons: a press by
// another user, or by the same user id of another team, changes nothing
// and publishes nothing; someone else's confirmation token deletes nothing.
func TestHomeStranger(t *testing.T) {
	hs, hm := homeSetup(t, setup{})
	hs.srv.AppHomeOpened("U0USER", "home")
	v := hs.view(t, "U0USER", 1)
	hs.srv.PressHome(slacktest.HomeAction{User: "U0USER", View: v, ActionID: actionHomeForget, Value: "facts/food.md"})
	v = hs.view(t, "U0USER", 2)
	_, buttons := viewText(t, v)
	token := strings.TrimPrefix(buttons[0], actionHomeConfirm+"=")
	for _, p := range []slacktest.HomeAction{
		{User: "U0OTHER", View: v, ActionID: actionHomeShare, Value: "facts/food.md"},
		{User: "U0OTHER", View: v, ActionID: actionHomeConfirm, Value: token},
		{Team: "T0ELSE", User: "U0USER", View: v, ActionID: actionHomeConfirm, Value: token},
	} {
		hs.srv.PressHome(p)
	}
	hs.quiet(t, 0)
	// A press runs after its ack: each refusal is logged when its press is
	// done, so the three logged mean the three presses are over.
	waitFor(t, "three refusals logged", func() bool {
		return strings.Count(hs.logs.String(), "pressed by someone other than its owner") == 3
	})
	if len(hm.Forgotten()) != 0 || len(hm.Sets()) != 0 || len(hs.srv.Views("")) != 2 {
		t.Errorf("a stranger's press changed something: %v %v %d views", hm.Forgotten(), hm.Sets(), len(hs.srv.Views("")))
	}
	// Bob's own tab, pressing ann's token: the flow's own refusal, to him.
	hs.srv.AppHomeOpened("U0OTHER", "home")
	bv := hs.view(t, "U0OTHER", 1)
	hs.srv.PressHome(slacktest.HomeAction{User: "U0OTHER", View: bv, ActionID: actionHomeConfirm, Value: token})
	if text, _ := viewText(t, hs.view(t, "U0OTHER", 2)); !strings.Contains(text, memorycmd.WrongUserText) || strings.Contains(text, "Ann") {
		t.Errorf("bob:\n%s", text)
	}
	// Ann's confirmation still works.
	hs.srv.PressHome(slacktest.HomeAction{User: "U0USER", View: v, ActionID: actionHomeConfirm, Value: token})
	hs.view(t, "U0USER", 3)
	if got := hm.Forgotten(); len(got) != 1 {
		t.Errorf("forgotten %v", got)
	}
}

// The search box searches the person's own memory and shows the results
// in the tab; a failure says so, without its details.
func TestHomeSearch(t *testing.T) {
	hs, hm := homeSetup(t, setup{})
	hm.hits = []plat.HomeHit{{Path: "episodes/2026-02.md", Line: 7, Heading: "Logger fix", Date: "2026-02-14", Text: "short IDs\nin <the> log"}}
	hs.srv.AppHomeOpened("U0USER", "home")
	v := hs.view(t, "U0USER", 1)
	hs.srv.PressHome(slacktest.HomeAction{User: "U0USER", View: v, ActionID: actionHomeSearch, Type: "plain_text_input", Value: "  short \n ids "})
	text, _ := viewText(t, hs.view(t, "U0USER", 2))
	if !strings.Contains(text, "Results for *short ids*") || !strings.Contains(text, "*`episodes/2026-02.md:7`* · Logger fix · 2026-02-14\n>short IDs\n>in &lt;the&gt; log") {
		t.Errorf("results:\n%s", text)
	}
	if _, q := hm.asked(); len(q) != 1 || q[0] != homeUser+"|short ids|6" {
		t.Errorf("queries %v", q)
	}
	if !bytes.Contains(hs.srv.Views("U0USER")[1].Blocks, []byte(`"initial_value":"short ids"`)) {
		t.Error("the search box does not keep the words")
	}
	hm.hits = nil
	hs.srv.PressHome(slacktest.HomeAction{User: "U0USER", View: v, ActionID: actionHomeSearch, Type: "plain_text_input", Value: "ramen"})
	if text, _ := viewText(t, hs.view(t, "U0USER", 3)); !strings.Contains(text, "Nothing I remember about you matches *ramen*") {
		t.Errorf("no results:\n%s", text)
	}
	for range homeHits + 1 {
		hm.hits = append(hm.hits, plat.HomeHit{Path: "facts/food.md", Line: 1, Text: "ramen"})
	}
	hs.srv.PressHome(slacktest.HomeAction{User: "U0USER", View: v, ActionID: actionHomeSearch, Type: "plain_text_input", Value: "ramen"})
	if text, _ := viewText(t, hs.view(t, "U0USER", 4)); strings.Count(text, "facts/food.md:1") != homeHits || !strings.Contains(text, "`/memory why ramen`") {
		t.Errorf("many results:\n%s", text)
	}
	hs.srv.PressHome(slacktest.HomeAction{User: "U0USER", View: v, ActionID: actionHomeSearch, Type: "plain_text_input", Value: "fail"})
	if text, _ := viewText(t, hs.view(t, "U0USER", 5)); !strings.Contains(text, searchBroken) || strings.Contains(text, "secret") {
		t.Errorf("failed search:\n%s", text)
	}
}

// The tab re-publishes when the app says the person's memory changed (a
// hand edit, a reflection, a forget): at once when the last publish is
// homeEvery old, else once when it is, showing the last change; people
// who never opened the tab get nothing.
func TestHomeRefresh(t *testing.T) {
	clk := clocktest.New(time.Date(2026, 2, 14, 9, 0, 0, 0, time.UTC))
	hs, hm := homeSetup(t, setup{bot: func(b *Bot) { b.home.clock = clk }})
	hs.bot.MemoryChanged(homeUser) // not opened yet: nothing
	hs.srv.AppHomeOpened("U0USER", "home")
	hs.view(t, "U0USER", 1)

	clk.Advance(homeEvery)
	hs.bot.MemoryChanged(homeUser) // a hand edit, 5 s after: at once
	hs.view(t, "U0USER", 2)
	// A reflection writes three files within a second: one publish, when
	// homeEvery has passed, of the last state.
	hs.bot.MemoryChanged(homeUser)
	hs.bot.MemoryChanged("slack-T0TEAM-U0OTHER") // never opened
	clk.WaitArmed(1)
	hm.mu.Lock()
	hm.files[homeUser] = append(hm.files[homeUser], plat.HomeFile{Path: "facts/work.md", Summary: "works on mnemo", Fact: true})
	hm.mu.Unlock()
	hs.bot.MemoryChanged(homeUser)
	hs.bot.MemoryChanged(homeUser)
	clk.Advance(homeEvery - time.Second)
	if n := len(hs.srv.Views("")); n != 2 {
		t.Fatalf("%d views before homeEvery passed", n)
	}
	clk.Advance(time.Second)
	text, _ := viewText(t, hs.view(t, "U0USER", 3))
	if !strings.Contains(text, "works on mnemo") {
		t.Errorf("the last change is not shown:\n%s", text)
	}
	hs.quiet(t, 0)
	if n := len(hs.srv.Views("")); n != 3 {
		t.Errorf("%d views; want 3", n)
	}
	// A forget of everything: the tab says nothing is remembered.
	hm.Memory.Forget(homeUser, "")
	clk.Advance(homeEvery)
	hs.bot.MemoryChanged(homeUser)
	if text, _ := viewText(t, hs.view(t, "U0USER", 4)); !strings.Contains(text, "I don't remember anything about you yet.") {
		t.Errorf("after a forget:\n%s", text)
	}
}

// A 429 from views.publish is waited out (its Retry-After) and the tab
// published after it; homeRetries in a row give up until the next change,
// with no loop.
func TestHomeRateLimited(t *testing.T) {
	clk := clocktest.New(time.Date(2026, 2, 14, 9, 0, 0, 0, time.UTC))
	hs, _ := homeSetup(t, setup{bot: func(b *Bot) { b.home.clock = clk }})
	hs.srv.FailNext("views.publish", slacktest.RateLimited(3*time.Second))
	hs.srv.AppHomeOpened("U0USER", "home")
	if _, err := hs.srv.WaitCalls("views.publish", 1, wait); err != nil {
		t.Fatal(err)
	}
	clk.WaitArmed(1)
	clk.Advance(3*time.Second - time.Millisecond)
	if n := len(hs.srv.Calls("views.publish")); n != 1 {
		t.Fatalf("%d calls before Retry-After passed", n)
	}
	clk.Advance(time.Millisecond)
	hs.view(t, "U0USER", 1)

	// Rate limited every time: homeRetries waits, then nothing more.
	hs.srv.FailNextN("views.publish", homeRetries+1, slacktest.RateLimited(time.Second))
	clk.Advance(homeEvery)
	hs.bot.MemoryChanged(homeUser)
	for i := range homeRetries {
		if _, err := hs.srv.WaitCalls("views.publish", 3+i, wait); err != nil {
			t.Fatal(err)
		}
		clk.WaitArmed(1)
		clk.Advance(time.Second)
	}
	if _, err := hs.srv.WaitCalls("views.publish", 3+homeRetries, wait); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the give-up logged", func() bool { return strings.Contains(hs.logs.String(), "views.publish is rate limited") })
	clk.Advance(time.Minute)
	hs.quiet(t, 0)
	if n := len(hs.srv.Calls("views.publish")); n != 3+homeRetries {
		t.Errorf("%d calls; want %d", n, 3+homeRetries)
	}
	// The next change publishes again.
	hs.bot.MemoryChanged(homeUser)
	hs.view(t, "U0USER", 2)
}

// However much is remembered, the view keeps to Block Kit's limits (the
// fake refuses more, as Slack does) and says what it left out.
func TestHomeLimits(t *testing.T) {
	hs, hm := homeSetup(t, setup{})
	long := strings.Repeat("ramen & <soup> ", 400)
	var files []plat.HomeFile
	for i := range 150 {
		files = append(files, plat.HomeFile{Path: fmt.Sprintf("facts/f%03d.md", i), Summary: long, Fact: true,
			Lines: []string{long, long, long, long, long}, MoreLines: 40})
	}
	var entries []plat.HomeEntry
	for i := range 10 {
		entries = append(entries, plat.HomeEntry{Path: "episodes/2026-02.md", Date: "2026-02-14", Title: fmt.Sprint("Entry ", i), Summary: long})
	}
	hm.files[homeUser], hm.entries[homeUser] = files, entries
	hm.Memory.Files[homeUser+":facts/f000.md"] = false
	hm.hits = []plat.HomeHit{{Path: "facts/f000.md", Line: 2, Heading: long, Text: long}}
	hs.srv.AppHomeOpened("U0USER", "home")
	v := hs.view(t, "U0USER", 1)
	hs.srv.PressHome(slacktest.HomeAction{User: "U0USER", View: v, ActionID: actionHomeForget, Value: "facts/f000.md"})
	hs.view(t, "U0USER", 2)
	hs.srv.PressHome(slacktest.HomeAction{User: "U0USER", View: v, ActionID: actionHomeSearch, Type: "plain_text_input", Value: long})
	v = hs.view(t, "U0USER", 3)
	var blocks []json.RawMessage
	json.Unmarshal(v.Blocks, &blocks)
	text, _ := viewText(t, v)
	if len(blocks) > maxViewBlocks || len(blocks) < maxViewBlocks-2 || !strings.Contains(text, "… 108 more, use `/memory`") || !strings.Contains(text, "*Newest entries*\n• 2026-02-14 Entry 0") || !strings.Contains(text, "… 5 more, use `/memory`") {
		t.Errorf("%d blocks:\n%s", len(blocks), text[max(0, len(text)-3000):])
	}
	for _, c := range hs.srv.Calls("views.publish") {
		if !c.OK {
			t.Errorf("views.publish refused: %s", c.Error)
		}
	}
}

// The fake refuses what Slack refuses: a view past Block Kit's limits, with
// Slack's error and the place named.
func TestViewsPublishLimits(t *testing.T) {
	hs, _ := homeSetup(t, setup{})
	section := func(text string) map[string]any {
		return map[string]any{"type": "section", "text": map[string]any{"type": "mrkdwn", "text": text}}
	}
	button := func(id, value string) map[string]any {
		return map[string]any{"type": "actions", "elements": []map[string]any{{"type": "button", "action_id": id, "value": value,
			"text": map[string]any{"type": "plain_text", "text": "x"}}}}
	}
	many := make([]any, maxViewBlocks+1)
	for i := range many {
		many[i] = section("x")
	}
	for _, c := range []struct {
		name   string
		params map[string]any
		want   string
	}{
		{"ok", map[string]any{"user_id": "U1", "view": map[string]any{"type": "home", "blocks": many[:maxViewBlocks]}}, ""},
		{"no user", map[string]any{"view": map[string]any{"type": "home", "blocks": []any{}}}, "/user_id"},
		{"not home", map[string]any{"user_id": "U1", "view": map[string]any{"type": "modal", "blocks": []any{}}}, "/view/type"},
		{"101 blocks", map[string]any{"user_id": "U1", "view": map[string]any{"type": "home", "blocks": many}}, "at most 100 items [json-pointer:/view/blocks]"},
		{"long section", map[string]any{"user_id": "U1", "view": map[string]any{"type": "home", "blocks": []any{section(strings.Repeat("é", 3001))}}}, "/view/blocks/0/text/text"},
		{"long value", map[string]any{"user_id": "U1", "view": map[string]any{"type": "home", "blocks": []any{button("a", strings.Repeat("v", 2001))}}}, "/elements/0/value"},
		{"long action id", map[string]any{"user_id": "U1", "view": map[string]any{"type": "home", "blocks": []any{button(strings.Repeat("a", 256), "v")}}}, "/elements/0/action_id"},
		{"same block id", map[string]any{"user_id": "U1", "view": map[string]any{"type": "home", "blocks": []any{
			map[string]any{"type": "divider", "block_id": "b"}, map[string]any{"type": "divider", "block_id": "b"}}}}, "duplicate block_id"},
		{"long metadata", map[string]any{"user_id": "U1", "view": map[string]any{"type": "home", "blocks": []any{}, "private_metadata": strings.Repeat("m", 3001)}}, "/view/private_metadata"},
		{"long header", map[string]any{"user_id": "U1", "view": map[string]any{"type": "home", "blocks": []any{
			map[string]any{"type": "header", "text": map[string]any{"type": "plain_text", "text": strings.Repeat("h", 151)}}}}}, "/view/blocks/0/text"},
	} {
		t.Run(c.name, func(t *testing.T) {
			body, _ := json.Marshal(c.params)
			res := postJSON(t, hs.srv, "views.publish", body)
			if c.want == "" {
				if res.OK != true {
					t.Errorf("refused: %+v", res)
				}
				return
			}
			if res.OK || res.Error != "invalid_arguments" || len(res.Meta.Messages) != 1 || !strings.Contains(res.Meta.Messages[0], c.want) {
				t.Errorf("answer %+v; want invalid_arguments naming %q", res, c.want)
			}
		})
	}
}

type apiAnswer struct {
	OK    bool   `json:"ok"`
	Error string `json:"error"`
	Meta  struct {
		Messages []string `json:"messages"`
	} `json:"response_metadata"`
}

func postJSON(t *testing.T, srv *slacktest.Server, method string, body []byte) apiAnswer {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, srv.APIURL()+method, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+srv.Options().BotToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var a apiAnswer
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
		t.Fatal(err)
	}
	return a
}

// Someone the access policy does not let in gets its refusal as their
// tab, and nothing of memory.
func TestHomeAccess(t *testing.T) {
	gate := access.NewGate(access.GateOptions{Platform: access.Slack, Policy: access.Policy{Mode: access.Allowlist}})
	hs, hm := homeSetup(t, setup{config: func(c *Config) { c.Access = gate }})
	hs.srv.AppHomeOpened("U0USER", "home")
	text, buttons := viewText(t, hs.view(t, "U0USER", 1))
	if len(buttons) != 0 || strings.Contains(text, "ramen") {
		t.Errorf("refused:\n%s %v", text, buttons)
	}
	hs.srv.PressHome(slacktest.HomeAction{User: "U0USER", View: slacktest.View{PrivateMetadata: homeKey}, ActionID: actionHomeShare, Value: "facts/food.md"})
	hs.view(t, "U0USER", 2)
	if homes, _ := hm.asked(); len(homes) != 0 || len(hm.Sets()) != 0 {
		t.Errorf("memory read or changed: %v %v", homes, hm.Sets())
	}
}

// A memory that cannot be read, that panics, or that has no Home says so
// in the tab, without details.
func TestHomeMemoryFails(t *testing.T) {
	hs, hm := homeSetup(t, setup{})
	hm.err = errors.New("/secret/data: gone")
	hs.srv.AppHomeOpened("U0USER", "home")
	if text, _ := viewText(t, hs.view(t, "U0USER", 1)); !strings.Contains(text, homeBroken) || strings.Contains(text, "secret") {
		t.Errorf("error:\n%s", text)
	}
	hm.err = nil
	hs.srv.FailNext("views.publish", slacktest.APIError("invalid_arguments"))
	hs.srv.AppHomeOpened("U0USER", "home")
	waitFor(t, "the refusal logged", func() bool { return strings.Contains(hs.logs.String(), "cannot publish a Home tab") })
	hm.panics = true
	hs.srv.AppHomeOpened("U0USER", "home")
	if text, _ := viewText(t, hs.view(t, "U0USER", 2)); !strings.Contains(text, homeBroken) {
		t.Errorf("panic:\n%s", text)
	}
	hs2 := start(t, setup{}) // bottest.Memory alone: no Home
	hs2.srv.AppHomeOpened("U0USER", "home")
	if text, _ := viewText(t, hs2.view(t, "U0USER", 1)); !strings.Contains(text, homeNoMemory) {
		t.Errorf("no home:\n%s", text)
	}
}

// The view's text helpers: a section's text cut at a line with "… N more",
// a line too long alone cut; sizes as the index writes them.
func TestHomeTextHelpers(t *testing.T) {
	long := strings.Repeat("x", maxSectionText+10)
	for _, c := range []struct {
		in   string
		want string
	}{
		{"short", "short"},
		{long, strings.Repeat("x", maxSectionText/2-1) + "…\n_… 0 more, use `/memory`_"},
		{long + "\nnext\nlast", strings.Repeat("x", maxSectionText/2-1) + "…\n_… 2 more, use `/memory`_"},
		{strings.Repeat("ab\n", 1500), ""}, // many lines: as many as fit, then how many more
	} {
		got := fitSection(c.in)
		if c.want == "" && strings.HasPrefix(got, "ab\nab\n") && strings.HasSuffix(got, " more, use `/memory`_") {
			c.want = got
		}
		if got != c.want || utf8.RuneCountInString(got) > maxSectionText {
			t.Errorf("fitSection(%.20q…) = %.40q… (%d)", c.in, got, utf8.RuneCountInString(got))
		}
	}
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1536: "1.5 KB", 3 << 20: "3.0 MB"} {
		if got := humanSize(n); got != want {
			t.Errorf("humanSize(%d) = %q", n, got)
		}
	}
	if cutRunes("héllo", 3) != "hé…" || cutRunes("hé", 3) != "hé" {
		t.Error("cutRunes")
	}
}
