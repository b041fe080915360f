package wiring

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/agent/llm"
	"github.com/mnemo-agent/mnemo/agent/llm/llmtest"
	"github.com/mnemo-agent/mnemo/memory"
	"github.com/mnemo-agent/mnemo/reflector"
	"go.uber.org/goleak"
)

// The leak table: every input a model can receive for a channel — the
// Thinker's request (system prompt, index, thread context, tool
// definitions), each tool's result for every path form, the reflector's
// prompt and pre-load, error texts — built by the real core (store,
// views, Thinker, reflector) from a memory whose private files hold
// leakMark, which must be absent from all of them. The same memory in a
// DM gives the mark (the control: the rows reach it).
//
// To add a case: a file to leakFiles, a row to leakReads (a path both
// models read), leakChanges (a reflector's change) or leakInputs (any
// other text the models receive).
const leakMark = "PRIVATE-MARKER-7f3a"

const (
	leakUser = "ann"
	leakChan = "#slack-T1-C1" // the channel the task is in
	// leakLinked is a channel whose facts and episodes folders are
	// symlinks to the speaker's.
	leakLinked = "#slack-T1-C3"
	leakOff    = "#slack-T1-C2" // a channel with memory off
)

// leakFiles is the memory on disk, by path under the memory folder.
var leakFiles = map[string]string{
	// ann's private files, each a different way of being private.
	"ann/facts/secret.md":           "# Secret\n\n> Summary: ann's code " + leakMark + "\n\n- Code: " + leakMark + "\n",
	"ann/facts/marked.md":           "# Marked\n\n> Summary: " + leakMark + "\n> Visibility: private\n\n- " + leakMark + "\n",
	"ann/facts/x.shared.md":         "# X\n\n> Summary: " + leakMark + "\n> Visibility: private\n\n- made private by ann: " + leakMark + "\n",
	"ann/facts/twoline.md":          "# Two\n\n> Summary: " + leakMark + "\n> Visibility: shared\n> Visibility: private\n",
	"ann/facts/late.md":             "# Late\n\n> Summary: " + leakMark + "\n\n## Entry\n> Visibility: shared\n",
	"ann/facts/typo.md":             "# Typo\n\n> Summary: " + leakMark + "\n> Visibility: sharde\n",
	"ann/facts/far.md":              "# Far\n\n> Summary: " + leakMark + "\n" + strings.Repeat("- filler\n", 2000) + "> Visibility: shared\n",
	"ann/facts/bom.md":              "\ufeff> Visibility: private\n# Bom\n\n> Summary: " + leakMark + "\n",
	"ann/facts/spelled.md":          "# Spelled\n\n> Summary: " + leakMark + "\n> visibility:SHARED\n", // not the exact line
	"ann/facts/fenced.md":           "# Fenced\n\n> Summary: " + leakMark + "\n```\n> Visibility: shared\n```\n",
	"ann/facts/hardsrc.md":          "# Hard\n\n> Summary: " + leakMark + "\n> Visibility: shared\n",
	"ann/facts/empty.shared.md":     "",
	"ann/facts/" + leakMark + ".md": "# Named\n\n> Summary: a file whose name is private\n",
	"ann/episodes/2026-03.md":       "# 2026-03 Episodes\n\n> Summary: " + leakMark + "\n\n## Told\n- Summary: " + leakMark + "\n- Date: 2026-03-02\n",
	// ann's shared files.
	"ann/facts/public.md":            "# Public\n\n> Summary: ann's public facts\n> Visibility: shared\n\n- Team: platform\n",
	"ann/facts/team.md":              "# Team\n\n> Summary: ann's team\n> Visibility: shared\n\n- Lead: Kim\n",
	"ann/episodes/2026-02.shared.md": "# 2026-02 Episodes\n\n> Summary: standups\n> Visibility: shared\n\n## Standup\n- Summary: standup\n- Date: 2026-02-02\n",
	// Another person's files, private and shared: none is ann's to see.
	"bob/facts/user.md":              "# Bob\n\n> Summary: " + leakMark + "\n\n- " + leakMark + "\n",
	"bob/facts/pub.md":               "# Bob public\n\n> Summary: " + leakMark + "\n> Visibility: shared\n",
	"bob/episodes/2026-03.shared.md": "# 2026-03 Episodes\n\n> Summary: " + leakMark + "\n> Visibility: shared\n\n## B\n- Summary: b\n- Date: 2026-03-01\n",
	// The channel's memory.
	leakChan + "/facts/decisions.md":  "# Decisions\n\n> Summary: team decisions\n\n- ship on Fridays\n",
	leakChan + "/episodes/2026-03.md": "# 2026-03 Episodes\n\n> Summary: retro\n\n## Retro\n- Summary: retro\n- Date: 2026-03-04\n",
	// Another channel's memory: not this one's.
	"#slack-T1-C9/facts/other.md": "# Other\n\n> Summary: " + leakMark + "\n",
}

// leakLinks are made beside the files: symlinks (to a private file, with
// a shared name, and a channel's folders to the speaker's) and a hard link.
func leakLinks(t *testing.T, dir string) {
	t.Helper()
	for link, target := range map[string]string{
		"ann/facts/link.md":              "secret.md",
		"ann/facts/link.shared.md":       "secret.md",
		"ann/episodes/2026-04.shared.md": "2026-03.md",
		leakLinked + "/facts":            "../ann/facts",
		leakLinked + "/episodes":         "../ann/episodes",
	} {
		name := filepath.Join(dir, link)
		if err := os.MkdirAll(filepath.Dir(name), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, name); err != nil {
			t.Fatal(err)
		}
	}
	// A hard link to a file that says it is shared but has a second name:
	// both names are refused (it may be a file from outside the folder).
	if err := os.Link(filepath.Join(dir, "ann/facts/hardsrc.md"), filepath.Join(dir, "ann/facts/hard.shared.md")); err != nil {
		t.Logf("no hard link on this platform (%v): its rows answer as for a missing file", err)
	}
}

// Answers a row's result must hold, so a row that did not run as meant
// fails rather than passes.
const (
	missing = "no such memory file"
	badPath = "bad memory path"
	ok      = `{"success":true}`
	refused = "cannot be written from this channel"
)

// leakReads: paths that memory_read is given, by the Thinker in the channel
// and by the reflector reflecting the channel's turn.
var leakReads = []struct{ path, want string }{
	{"facts/secret.md", missing},
	{"facts/marked.md", missing},
	{"facts/x.shared.md", missing}, // a shared name made private
	{"facts/x.md", missing},        // whose shared file is private
	{"facts/twoline.md", missing},
	{"facts/late.md", missing},
	{"facts/typo.md", missing},
	{"facts/far.md", missing},
	{"facts/bom.md", missing},
	{"facts/empty.shared.md", missing},
	{"facts/empty.md", missing},
	{"facts/hardsrc.md", missing},
	{"facts/hard.shared.md", missing},
	{"facts/hard.md", missing},
	{"facts/link.md", missing},
	{"facts/link.shared.md", missing},
	{"episodes/2026-03.md", missing},
	{"episodes/2026-03.shared.md", missing},
	{"episodes/2026-04.md", missing},
	{"./facts/secret.md", badPath},
	{"facts/../facts/secret.md", badPath},
	{"facts/./secret.md", badPath},
	{"facts//secret.md", badPath},
	{"/facts/secret.md", badPath},
	{"Facts/secret.md", badPath},
	{"FACTS/SECRET.MD", badPath},
	{"facts/Secret.md", missing}, // a name of the grammar; on a case-blind disk it is secret.md, private
	{"facts/secret.MD", badPath},
	{"facts/secret", badPath},
	{"facts/secret.md/", badPath},
	{"facts\\secret.md", badPath},
	{"facts\uff0fsecret.md", badPath}, // fullwidth solidus
	{"f\u0430cts/secret.md", badPath}, // Cyrillic a
	{"facts/s\u0435cret.md", badPath}, // Cyrillic e
	{"facts/secret\u2024md", badPath}, // one dot leader
	{"facts/secret.md\u0000", badPath},
	{"facts%2fsecret.md", badPath},
	{"channel/../facts/secret.md", badPath},
	{"channel/facts/secret.md", missing},
	{"channel/./facts/secret.md", badPath},
	{"channel/../../ann/facts/secret.md", badPath},
	{"../ann/facts/secret.md", badPath},
	{"../bob/facts/user.md", badPath},
	{"../#slack-T1-C9/facts/other.md", badPath},
	// What the channel may read, so the reads above are known to work.
	{"facts/public.md", "- Team: platform"},
	{"facts/team.md", "- Lead: Kim"},
	{"episodes/2026-02.md", "## Standup"},
	{"channel/facts/decisions.md", "- ship on Fridays"},
}

// leakChanges: the reflector's changes from the channel's turn; after the
// run no private file has changed and every new file of ann's is shared.
var leakChanges = []struct {
	tool string
	args map[string]any
	want string
}{
	{"memory_list", map[string]any{}, "facts/public.md"},
	{"memory_write", map[string]any{"path": "facts/secret.md", "content": "# Secret\n\n> Summary: said in the channel\n> Visibility: private\n\n- Likes: tea\n"}, ok},
	{"memory_write", map[string]any{"path": "facts/x.md", "content": "# X\n\n> Summary: x\n"}, refused},
	{"memory_write", map[string]any{"path": "facts/x.shared.md", "content": "# X\n\n> Summary: x\n"}, refused},
	{"memory_write", map[string]any{"path": "facts/empty.md", "content": "# E\n\n> Summary: e\n"}, refused},
	{"memory_write", map[string]any{"path": "facts/../facts/secret.md", "content": "# S\n\n> Summary: s\n"}, badPath},
	{"memory_write", map[string]any{"path": "Facts/secret.md", "content": "# S\n\n> Summary: s\n"}, badPath},
	{"memory_write", map[string]any{"path": "facts/link.md", "content": "# L\n\n> Summary: l\n"}, "not a regular file"}, // link.shared.md is a symlink
	{"memory_patch", map[string]any{"path": "facts/marked.md", "patches": []memory.Patch{{OldText: "> Summary: ", NewText: "> Summary: x"}}}, missing},
	{"memory_patch", map[string]any{"path": "facts/x.md", "patches": []memory.Patch{{OldText: "- ", NewText: "- x"}}}, refused},
	{"memory_patch", map[string]any{"path": "facts/twoline.md", "patches": []memory.Patch{{OldText: "> Visibility: private\n", NewText: ""}}}, missing},
	{"memory_patch", map[string]any{"path": "facts/public.md", "patches": []memory.Patch{{OldText: "> Visibility: shared", NewText: "> Visibility: private"}}}, `"success":true`},
	{"memory_patch", map[string]any{"path": "channel/facts/decisions.md", "patches": []memory.Patch{{OldText: "Fridays", NewText: "Thursdays"}}}, `"success":true`},
	{"memory_patch", map[string]any{"path": "channel/../facts/secret.md", "patches": []memory.Patch{{OldText: "- Code:", NewText: "- x"}}}, badPath},
	{"memory_append", map[string]any{"path": "episodes/2026-03.md", "entry": "## Demo\n- Summary: demo\n- Date: 2026-03-10\n"}, ok},
	{"memory_append", map[string]any{"path": "channel/episodes/2026-03.md", "entry": "## Plan\n- Summary: plan\n- Date: 2026-03-10\n"}, ok},
	{"memory_append", map[string]any{"path": "episodes/2026-04.md", "entry": "## A\n- Summary: a\n- Date: 2026-04-01\n"}, "not a regular file"}, // its shared name is a symlink
	{"memory_read", map[string]any{"path": "facts/secret.shared.md"}, "- Likes: tea"},                                                           // written above
}

// leakRun is what the models received, by role.
type leakRun struct {
	dm, channel, off, linked []llm.Request // the Thinker's, per task
	reflDM, refl             []llm.Request // the reflector's: the DM's run, the channels'
}

// leakInputs: the texts other than tool results, each taken from the
// requests, with what it must hold to be the input it names.
var leakInputs = []struct {
	name string
	get  func(r leakRun) string
	want string
}{
	{"Thinker system prompt", func(r leakRun) string { return r.channel[0].Messages[0].Content }, "channel"},
	{"Thinker index", func(r leakRun) string { return message(r.channel[0], "Available memory") }, "- channel/facts/decisions.md ("},
	{"Thinker index lists shared files", func(r leakRun) string { return message(r.channel[0], "Available memory") }, "- facts/team.md ("},
	{"thread context", func(r leakRun) string { return message(r.channel[0], "Earlier messages in this thread") }, "what did you tell the bot"},
	{"the message", func(r leakRun) string { return last(r.channel[0]) }, "what do you know about me"},
	{"Thinker tool definitions", func(r leakRun) string { return toolDefs(r.channel[0]) }, "memory_read"},
	{"Thinker tool results", func(r leakRun) string { return all(r.channel[1:]) }, missing},
	{"memory off: the request", func(r leakRun) string { return all(r.off) }, "off"},
	{"linked channel: the Thinker's requests", func(r leakRun) string { return all(r.linked) }, "what is in here"},
	{"reflector system prompt", func(r leakRun) string { return r.refl[0].Messages[0].Content }, "memory"},
	{"reflector prompt", func(r leakRun) string { return r.refl[0].Messages[1].Content }, "This conversation was in a channel"},
	{"reflector pre-load: facts", func(r leakRun) string {
		return section(r.refl[0].Messages[1].Content, "## Fact files", "## Episode index")
	}, "### channel/facts/decisions.md"},
	{"reflector pre-load: episodes", func(r leakRun) string {
		return section(r.refl[0].Messages[1].Content, "## Episode index", "# Conversation")
	}, "episodes/2026-02.shared.md"},
	{"reflector transcript", func(r leakRun) string { return section(r.refl[0].Messages[1].Content, "# Conversation", "") }, "OTHER PERSON"},
	{"reflector tool definitions", func(r leakRun) string { return toolDefs(r.refl[0]) }, "memory_append"},
	{"reflector tool results", func(r leakRun) string { return all(r.refl[1:]) }, refused},
	{"every channel request", func(r leakRun) string { return all(r.channel, r.off, r.linked, r.refl) }, ""},
}

// message is the content of the first message of req that starts with s.
func message(req llm.Request, s string) string {
	for _, m := range req.Messages {
		if strings.HasPrefix(m.Content, s) {
			return m.Content
		}
	}
	return ""
}

func last(req llm.Request) string { return req.Messages[len(req.Messages)-1].Content }

func toolDefs(req llm.Request) string {
	b, _ := json.Marshal(req.Tools)
	return string(b)
}

// all is every request as JSON: every message, tool call and definition.
func all(reqs ...[]llm.Request) string {
	var b strings.Builder
	for _, rs := range reqs {
		for _, r := range rs {
			j, _ := json.Marshal(r)
			b.Write(j)
			// And as sent, unescaped: a mark escaped in JSON would hide.
			for _, m := range r.Messages {
				b.WriteString(m.Content)
				for _, c := range m.ToolCalls {
					b.WriteString(c.Arguments)
				}
			}
		}
	}
	return b.String()
}

// section is s from the line starting with from up to the line starting
// with to ("": the end).
func section(s, from, to string) string {
	i := strings.Index(s, "\n"+from)
	if i < 0 {
		return ""
	}
	s = s[i:]
	if to != "" {
		if j := strings.Index(s, "\n"+to); j >= 0 {
			s = s[:j]
		}
	}
	return s
}

// toolResults maps each tool call ID of reqs to its result.
func toolResults(reqs []llm.Request) map[string]string {
	out := map[string]string{}
	for _, r := range reqs {
		for _, m := range r.Messages {
			if m.Role == llm.RoleTool {
				out[m.ToolCallID] = m.Content
			}
		}
	}
	return out
}

func readCalls(prefix string) []llm.ToolCall {
	calls := []llm.ToolCall{{ID: prefix + "list", Name: "memory_list", Arguments: "{}"}}
	for i, r := range leakReads {
		args, _ := json.Marshal(map[string]string{"path": r.path})
		calls = append(calls, llm.ToolCall{ID: fmt.Sprintf("%sread-%d", prefix, i), Name: "memory_read", Arguments: string(args)})
	}
	return calls
}

func TestLeakTable(t *testing.T) {
	defer goleak.VerifyNone(t) // the core's reflector loops end at Close
	dir := t.TempDir()
	memDir := filepath.Join(dir, "memory")
	for name, text := range leakFiles {
		p := filepath.Join(memDir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	leakLinks(t, memDir)

	var changes []llm.ToolCall
	for i, c := range leakChanges {
		args, _ := json.Marshal(c.args)
		changes = append(changes, llm.ToolCall{ID: fmt.Sprintf("change-%d", i), Name: c.tool, Arguments: string(args)})
	}
	thinker := llmtest.New(
		// The DM: the control.
		llmtest.Calls(llm.ToolCall{ID: "dm-read", Name: "memory_read", Arguments: `{"path":"facts/secret.md"}`}), llmtest.Text("noted"),
		// The channel: every read.
		llmtest.Calls(readCalls("thinker-")...), llmtest.Text("here is what I know"),
		// The channel with memory off.
		llmtest.Text("memory is off here"),
		// The channel whose folders are links to ann's.
		llmtest.Calls(llm.ToolCall{ID: "linked-list", Name: "memory_list", Arguments: "{}"},
			llm.ToolCall{ID: "linked-read", Name: "memory_read", Arguments: `{"path":"channel/facts/secret.md"}`},
			llm.ToolCall{ID: "linked-ep", Name: "memory_read", Arguments: `{"path":"channel/episodes/2026-03.md"}`}),
		llmtest.Text("nothing here"),
	)
	refl := llmtest.New(
		llmtest.Text("nothing to remember"), // the DM's run
		llmtest.Calls(append(readCalls("refl-"), changes...)...), llmtest.Text("done"),
		llmtest.Text("nothing to remember"), // the linked channel's run
	)
	c, err := Open(Options{
		Thinker: thinker, Reflector: refl, ThinkerModel: "m", ReflectorModel: "m",
		Store:    memory.Options{Dir: memDir},
		StateDir: filepath.Join(dir, "state"),
		Reflect:  reflector.Config{MaxTurns: 100, Idle: time.Hour, FactsBudget: 64 << 10},
	})
	if err != nil {
		t.Fatal(err)
	}
	counts := []int{}
	handle := func(task mnemo.Task) {
		t.Helper()
		if r, err := c.Agent.Handle(context.Background(), task); err != nil || r.Failed {
			t.Fatalf("Handle(%q) = %+v, %v", task.Text, r, err)
		}
		counts = append(counts, len(thinker.Requests()))
	}
	handle(mnemo.Task{User: leakUser, Speaker: "Ann", Platform: "slack", Conversation: "slack:D1",
		Text: "remember: my code is " + leakMark})
	handle(mnemo.Task{User: leakUser, Speaker: "Ann", Platform: "slack", Conversation: "slack:C1:1700000000.000100",
		Channel: true, ChannelKey: leakChan, Text: "what do you know about me?",
		Context: []mnemo.ContextMessage{
			{Author: "Bob", Text: "Ann, what did you tell the bot in private?"},
			{Author: "Ann", Text: "ask it", FromSpeaker: true},
		}})
	handle(mnemo.Task{User: leakUser, Speaker: "Ann", Platform: "slack", Conversation: "slack:C2:1700000000.000200",
		Channel: true, ChannelKey: leakOff, ChannelMemory: mnemo.ChannelMemoryOff, Text: "anything about me? (memory off)"})
	handle(mnemo.Task{User: leakUser, Speaker: "Ann", Platform: "slack", Conversation: "slack:C3:1700000000.000300",
		Channel: true, ChannelKey: leakLinked, Text: "what is in here?"})
	if rerr, err := c.Close(context.Background()); rerr != nil || err != nil {
		t.Fatalf("Close = %v, %v", rerr, err)
	}
	if thinker.Pending() != 0 || refl.Pending() != 0 {
		t.Fatalf("replies left: Thinker %d, reflector %d", thinker.Pending(), refl.Pending())
	}

	treqs, rreqs := thinker.Requests(), refl.Requests()
	run := leakRun{
		dm: treqs[:counts[0]], channel: treqs[counts[0]:counts[1]], off: treqs[counts[1]:counts[2]], linked: treqs[counts[2]:counts[3]],
		reflDM: rreqs[:1], refl: rreqs[1:],
	}
	// The control: in the DM the mark is there to be found.
	if !strings.Contains(all(run.dm), leakMark+".md (") || !strings.Contains(toolResults(run.dm)["dm-read"], "- Code: "+leakMark) {
		t.Fatalf("the DM's requests do not hold the mark: the table would prove nothing\n%s", all(run.dm))
	}
	if !strings.Contains(all(run.reflDM), "This conversation was private") || strings.Contains(all(run.refl), "This conversation was private") {
		t.Fatal("the reflector's runs are not in the order the test expects (the DM's first)")
	}
	if len(run.channel) != 2 || len(run.refl) != 3 || len(run.off) != 1 || len(run.linked) != 2 {
		t.Fatalf("requests: channel %d, reflector %d, off %d, linked %d", len(run.channel), len(run.refl), len(run.off), len(run.linked))
	}

	for _, in := range leakInputs {
		text := in.get(run)
		if !strings.Contains(text, in.want) || text == "" {
			t.Errorf("%s: does not hold %q, so it is not the input meant:\n%s", in.name, in.want, text)
		}
		if strings.Contains(text, leakMark) {
			t.Errorf("LEAK in %s:\n%s", in.name, text)
		}
	}
	thinkerResults, reflResults := toolResults(run.channel), toolResults(run.refl)
	for i, r := range leakReads {
		for who, results := range map[string]map[string]string{"Thinker": thinkerResults, "reflector": reflResults} {
			prefix := map[string]string{"Thinker": "thinker-", "reflector": "refl-"}[who]
			res, ok := results[fmt.Sprintf("%sread-%d", prefix, i)]
			switch {
			case !ok:
				t.Errorf("%s memory_read %q: no result", who, r.path)
			case strings.Contains(res, leakMark):
				t.Errorf("LEAK: %s memory_read %q = %s", who, r.path, res)
			case !strings.Contains(res, r.want):
				t.Errorf("%s memory_read %q = %s; want it to hold %q", who, r.path, res, r.want)
			}
		}
	}
	for i, ch := range leakChanges {
		res := reflResults[fmt.Sprintf("change-%d", i)]
		if strings.Contains(res, leakMark) || !strings.Contains(res, ch.want) {
			t.Errorf("reflector %s %v = %s; want it to hold %q and not the mark", ch.tool, ch.args["path"], res, ch.want)
		}
	}
	for _, id := range []string{"linked-list", "linked-read", "linked-ep"} {
		if res, ok := toolResults(run.linked)[id]; !ok || strings.Contains(res, leakMark) {
			t.Errorf("linked channel %s = %q", id, res)
		}
	}
	if len(run.off[0].Tools) != 0 || message(run.off[0], "Available memory") != "" {
		t.Errorf("memory off: tools %d, index %q", len(run.off[0].Tools), message(run.off[0], "Available memory"))
	}

	// On disk: no file that was private changed, and every file the
	// channel's reflection made for ann is shared and without the mark.
	for name, text := range leakFiles {
		if strings.HasPrefix(name, leakChan+"/") {
			continue // the channel's own memory: the reflection may change it
		}
		got, err := os.ReadFile(filepath.Join(memDir, name))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if !memory.IsShared(text) && string(got) != text {
			t.Errorf("the channel's reflection changed the private file %s:\n%s", name, got)
		}
	}
	err = filepath.WalkDir(filepath.Join(memDir, leakUser), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Type()&os.ModeSymlink != 0 {
			return err
		}
		rel, _ := filepath.Rel(memDir, p)
		if _, old := leakFiles[rel]; old || rel == "ann/facts/hard.shared.md" {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if !memory.IsShared(string(b)) || strings.Contains(string(b), leakMark) {
			t.Errorf("the channel's reflection made %s:\n%s", rel, b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"ann/facts/secret.shared.md", "ann/episodes/2026-03.shared.md"} {
		if _, err := os.Stat(filepath.Join(memDir, want)); err != nil {
			t.Errorf("the channel's reflection did not make %s: %v", want, err)
		}
	}
}
