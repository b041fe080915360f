package userdata

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/agent/llm/llmtest"
	"github.com/mnemo-agent/mnemo/cmd/internal/wiring"
	"github.com/mnemo-agent/mnemo/memory"
	"github.com/mnemo-agent/mnemo/memory/durable"
	memhistory "github.com/mnemo-agent/mnemo/memory/history"
	"github.com/mnemo-agent/mnemo/reflector"
	"go.uber.org/goleak"
)

const chanKey = "#slack-T01-C02"

const aliceFact = "# Alice\n> summary: alice's pets\n> Visibility: shared\n\n- Has a cat called Zebra.\n"

const aliceEpisodes = "# Episodes 2026-11\n> Summary: tests\n\n## Fixed the flaky test\n- Summary: a race in the cache\n- Date: 2026-11-03\n\n## Set up CI\n- Date: 2026-11-20\n"

// journals are the intake journals of slack and discord as their
// platforms register them (a file in <state>/intake each), live where
// live names the running adapter's Forget.
func journals(live map[string]func(string) int) []Journal {
	var js []Journal
	for _, name := range []string{"slack", "discord"} {
		js = append(js, Journal{Platform: name, Live: live[name], File: func(dir, user string) (int, error) {
			_, err := os.Stat(filepath.Join(dir, name+".jsonl")) // a journal of none of user's messages
			if errors.Is(err, fs.ErrNotExist) {
				return 0, nil
			}
			return 0, err
		}})
	}
	return js
}

// world is a state folder and a memory store with alice's and a
// channel's files, and their history.
type world struct {
	state string
	store *memory.Store
	hist  *memhistory.Store
}

func put(t *testing.T, name, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

func exists(name string) bool {
	_, err := os.Lstat(name)
	return err == nil
}

func newWorld(t *testing.T) *world {
	t.Helper()
	dir := t.TempDir()
	w := &world{state: filepath.Join(dir, "state")}
	files := map[string]string{
		"alice/facts/pets.md": aliceFact, "alice/episodes/2026-11.md": aliceEpisodes,
		chanKey + "/facts/decisions.md": "# Decisions\n> summary: what we chose\n\n- Go.\n",
	}
	var err error
	if w.hist, err = memhistory.Open(memhistory.Options{Dir: filepath.Join(w.state, "history")}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.hist.Close() })
	for rel, text := range files {
		put(t, filepath.Join(dir, "memory", rel), text)
		owner, p, _ := strings.Cut(rel, "/")
		if _, _, err := w.hist.Record(owner, p, []byte(text), "test"); err != nil {
			t.Fatal(err)
		}
	}
	if w.store, err = memory.Open(memory.Options{Dir: filepath.Join(dir, "memory"), IndexCache: filepath.Join(w.state, "index")}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.store.Close() })
	return w
}

// offline is the service as `mnemo memory` builds it.
func (w *world) offline() *Service {
	return New(Wiring{StateDir: w.state, Store: w.store, History: w.hist, Journals: journals(nil)}, nil)
}

func names(hs []Holder) []string {
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = h.Name()
	}
	return out
}

// Every type of this package that is a Holder is in the registry, for
// the running and the offline case alike, and both lists are the same.
func TestEveryHolderIsRegistered(t *testing.T) {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi os.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
	if err != nil {
		t.Fatal(err)
	}
	methods := map[string]map[string]bool{} // type → its methods
	for _, f := range pkgs["userdata"].Files {
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv == nil {
				continue
			}
			typ := fn.Recv.List[0].Type
			if star, ok := typ.(*ast.StarExpr); ok {
				typ = star.X
			}
			name := typ.(*ast.Ident).Name
			if methods[name] == nil {
				methods[name] = map[string]bool{}
			}
			methods[name][fn.Name.Name] = true
		}
	}
	var holderTypes []string
	for typ, m := range methods {
		if m["Name"] && m["Forget"] {
			holderTypes = append(holderTypes, "*userdata."+typ)
		}
	}
	if len(holderTypes) < 8 {
		t.Fatalf("found only the holder types %q: is the scan broken?", holderTypes)
	}
	w := newWorld(t)
	offline := Holders(Wiring{StateDir: w.state, Store: w.store, History: w.hist, Journals: journals(nil)})
	running := Holders(Wiring{StateDir: w.state, Store: w.store, History: w.hist,
		Reflect: nil, Agent: nil, Journals: journals(map[string]func(string) int{"slack": func(string) int { return 0 }, "discord": func(string) int { return 0 }})})
	if !slices.Equal(names(offline), names(running)) {
		t.Errorf("the running holders %q differ from the offline ones %q", names(running), names(offline))
	}
	registered := map[string]bool{}
	for _, h := range offline {
		registered[fmt.Sprintf("%T", h)] = true
	}
	for _, typ := range holderTypes {
		if !registered[typ] {
			t.Errorf("%s is a Holder but Holders does not register it: a forget would leave its data", typ)
		}
	}
}

// A running platform's queue is asked; one that keeps no journal file (a
// test's fake) is a holder all the same, in its registration's place.
func TestHoldersOfRunningQueues(t *testing.T) {
	w := newWorld(t)
	asked := map[string][]string{}
	q := func(name string) func(string) int {
		return func(user string) int { asked[name] = append(asked[name], user); return 2 }
	}
	svc := New(Wiring{StateDir: w.state, Store: w.store, History: w.hist,
		Journals: append(journals(map[string]func(string) int{"slack": q("slack")}), Journal{Platform: "fake", Live: q("fake")})}, nil)
	if got := names(svc.Holders())[:3]; !slices.Equal(got, []string{"intake journal (slack)", "intake journal (discord)", "intake journal (fake)"}) {
		t.Errorf("queues: %q", got)
	}
	rep, err := svc.Forget(context.Background(), Request{Owner: "alice", Path: "facts/pets.md"})
	if err != nil {
		t.Fatal(err)
	}
	if want := "dropped 2 messages queued for an answer on slack, 2 messages queued for an answer on fake"; rep.String() != want {
		t.Errorf("report %q, want %q", rep, want)
	}
	if _, err := svc.Forget(context.Background(), Request{Owner: chanKey}); err != nil {
		t.Fatal(err)
	}
	if len(asked["slack"]) != 1 || len(asked["fake"]) != 1 {
		t.Errorf("the queues were asked %v: a channel's forget asks none", asked)
	}
}

// A person's whole forget, offline: the files, their history and index
// cache, the chat history and the reflections given up on go; a missing
// folder is ErrNotFound only after the rest went; the channel stays.
func TestForgetPersonOffline(t *testing.T) {
	w := newWorld(t)
	svc := w.offline()
	put(t, ChatHistoryFile(w.state, "alice"), "/memory\n")
	put(t, filepath.Join(w.state, "reflector", "failed", "alice-20260101T000000Z-r1.jsonl"), "{}\n")
	put(t, filepath.Join(w.state, "reflector", "failed", "alice-x-20260101T000000Z-r1.jsonl"), "{}\n")
	put(t, filepath.Join(w.state, "index", "alice.idx"), "stale")
	// Temp copies a crash left mid-write hold the same text.
	aliceTemps := []string{
		filepath.Join(w.state, "index", ".alice.idx"+durable.TempMarker+"X1"),
		filepath.Join(w.state, "chat", ".alice.history"+durable.TempMarker+"X2"),
	}
	bobTemp := filepath.Join(w.state, "chat", ".alice-x.history"+durable.TempMarker+"X3")
	for _, f := range append(aliceTemps, bobTemp) {
		put(t, f, "mid-write")
	}
	rep, err := svc.Forget(context.Background(), Request{Owner: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	if rep.String() != "dropped 1 reflection given up on" {
		t.Errorf("report %q", rep)
	}
	for _, gone := range []string{
		filepath.Join(w.store.Dir(), "alice"), filepath.Join(w.state, "history", "alice"), ChatHistoryFile(w.state, "alice"),
		filepath.Join(w.state, "index", "alice.idx"), filepath.Join(w.state, "reflector", "failed", "alice-20260101T000000Z-r1.jsonl"),
		aliceTemps[0], aliceTemps[1],
	} {
		if exists(gone) {
			t.Errorf("%s survived the forget", gone)
		}
	}
	for _, kept := range []string{
		filepath.Join(w.store.Dir(), chanKey), filepath.Join(w.state, "history", chanKey),
		filepath.Join(w.state, "reflector", "failed", "alice-x-20260101T000000Z-r1.jsonl"), bobTemp,
	} {
		if !exists(kept) {
			t.Errorf("%s went with alice's forget", kept)
		}
	}
	put(t, ChatHistoryFile(w.state, "alice"), "again\n")
	if _, err := svc.Forget(context.Background(), Request{Owner: "alice"}); !errors.Is(err, memory.ErrNotFound) {
		t.Errorf("forget without a folder: %v", err)
	}
	if exists(ChatHistoryFile(w.state, "alice")) {
		t.Error("the chat history stays when there is no memory folder")
	}
}

// One file's forget: its history goes (unless kept), the rest stays.
func TestForgetOneFile(t *testing.T) {
	w := newWorld(t)
	svc := w.offline()
	put(t, ChatHistoryFile(w.state, "alice"), "/memory\n")
	if _, err := svc.Forget(context.Background(), Request{Owner: "alice", Path: "episodes/2026-11.md", KeepHistory: true}); err != nil {
		t.Fatal(err)
	}
	if vs, _ := w.hist.List("alice", "episodes/2026-11.md"); len(vs) == 0 {
		t.Error("--keep-history did not keep the history")
	}
	if _, err := svc.Forget(context.Background(), Request{Owner: "alice", Path: "facts/pets.md"}); err != nil {
		t.Fatal(err)
	}
	if vs, _ := w.hist.List("alice", "facts/pets.md"); len(vs) != 0 {
		t.Error("the file's history survived")
	}
	if !exists(ChatHistoryFile(w.state, "alice")) {
		t.Error("a file's forget deleted the chat history")
	}
	if _, err := svc.Forget(context.Background(), Request{Owner: "alice", Path: "facts/none.md"}); !errors.Is(err, memory.ErrNotFound) {
		t.Errorf("a missing file: %v", err)
	}
	for _, r := range []Request{{Owner: "../x"}, {Owner: "alice", Path: "../x.md"}} {
		if _, err := svc.Forget(context.Background(), r); err == nil || errors.Is(err, memory.ErrNotFound) {
			t.Errorf("%+v: %v", r, err)
		}
	}
}

// A holder that fails stops the forget with its reason, naming the fix.
func TestForgetFailures(t *testing.T) {
	for _, tc := range []struct {
		name, block, want string
		owner             string // "": alice
	}{
		{"slack intake", "intake", "forget alice: could not drop the messages queued for an answer on slack", ""},
		{"reflection journal", "reflector/alice.jsonl/x", "forget alice: could not drop the turns waiting to be reflected", ""},
		{"failed folder", "reflector/failed", "forget alice: could not drop the reflections given up on", ""},
		{"failed file", "reflector/failed/alice-20260101T000000Z-r1.jsonl/x", "forget alice: could not drop the reflections given up on", ""},
		{"index cache", "index/carol.idx/x", "the memory is deleted, but not its index cache", "carol"}, // no folder: the store's RemoveAll did not remove it
		{"chat history", "chat/alice.history/x", "the memory is deleted, but not the chat history", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			put(t, filepath.Join(w.state, tc.block), "in the way")
			owner := cmp.Or(tc.owner, "alice")
			if _, err := w.offline().Forget(context.Background(), Request{Owner: owner}); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("forget = %v, want %q", err, tc.want)
			}
		})
	}
	w := newWorld(t)
	w.hist.Close()
	if _, err := w.offline().Forget(context.Background(), Request{Owner: "alice"}); err == nil || !strings.Contains(err.Error(), "the memory is deleted, but not its history") {
		t.Errorf("forget with a closed history = %v", err)
	}
}

// A channel's forget detaches it from the turns said there, and deletes
// only its files and their history.
func TestForgetChannel(t *testing.T) {
	w := newWorld(t)
	put(t, ChatHistoryFile(w.state, "alice"), "/memory\n")
	rep, err := w.offline().Forget(context.Background(), Request{Owner: chanKey})
	if err != nil || rep.String() != "" {
		t.Fatalf("forget = %q, %v", rep, err)
	}
	if exists(filepath.Join(w.store.Dir(), chanKey)) || exists(filepath.Join(w.state, "history", chanKey)) {
		t.Error("the channel's memory or history survived")
	}
	if !exists(filepath.Join(w.store.Dir(), "alice")) || !exists(ChatHistoryFile(w.state, "alice")) {
		t.Error("a channel's forget took a person's data")
	}
}

// While a process runs, the live reflector and Thinker are asked.
func TestForgetLive(t *testing.T) {
	defer goleak.VerifyNone(t)
	w := newWorld(t)
	core, err := wiring.Open(wiring.Options{
		Thinker: llmtest.New(llmtest.Text("Noted.")), Reflector: llmtest.New(), ThinkerModel: "m", ReflectorModel: "m",
		Store: memory.Options{Dir: filepath.Join(t.TempDir(), "memory")}, StateDir: w.state,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer core.Close(context.Background())
	if _, err := core.Agent.Handle(context.Background(), mnemo.Task{User: "alice", Conversation: "c1", Text: "My cat is Zebra."}); err != nil {
		t.Fatal(err)
	}
	svc := New(Wiring{StateDir: w.state, Store: core.Store, History: w.hist, Reflect: core.Reflector, Agent: core.Agent}, nil)
	rep, err := svc.Forget(context.Background(), Request{Owner: "alice"})
	if !errors.Is(err, memory.ErrNotFound) || rep.String() != "dropped 1 turn waiting to be reflected, 1 turn of short-term history" {
		t.Errorf("forget = %q, %v", rep, err)
	}
	if _, err := svc.Forget(context.Background(), Request{Owner: chanKey}); !errors.Is(err, memory.ErrNotFound) {
		t.Errorf("forget of a channel without memory: %v", err)
	}
	core.Reflector.Close(context.Background())
	if _, err := svc.Forget(context.Background(), Request{Owner: "alice"}); !errors.Is(err, memory.ErrNotFound) {
		t.Errorf("forget after the reflector closed: %v", err)
	}
}

// One file's forget keeps the person's turns waiting to be reflected and
// their short-term history (live and offline), marking the file forgotten
// in the turns so their reflection cannot write it again. Before the fix
// it dropped every pending turn and the whole short-term history.
func TestForgetOneFileKeepsTurnsAndHistory(t *testing.T) {
	defer goleak.VerifyNone(t)
	w := newWorld(t)
	mem := filepath.Join(t.TempDir(), "memory")
	put(t, filepath.Join(mem, "alice", "facts", "food.md"), "# Food\n> Summary: food\n\n- Sushi\n")
	core, err := wiring.Open(wiring.Options{
		Thinker: llmtest.New(llmtest.Text("Noted."), llmtest.Text("Noted.")), Reflector: llmtest.New(), ThinkerModel: "m", ReflectorModel: "m",
		Store: memory.Options{Dir: mem}, StateDir: w.state, Reflect: reflector.Config{Idle: time.Hour, MaxTurns: 100},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer core.Close(context.Background())
	for _, text := range []string{"I love sushi.", "I moved to Paris."} {
		if _, err := core.Agent.Handle(context.Background(), mnemo.Task{User: "alice", Conversation: "c1", Text: text}); err != nil {
			t.Fatal(err)
		}
	}
	svc := New(Wiring{StateDir: w.state, Store: core.Store, History: w.hist, Reflect: core.Reflector, Agent: core.Agent}, nil)
	rep, err := svc.Forget(context.Background(), Request{Owner: "alice", Path: "facts/food.md"})
	if err != nil || rep.String() != "" {
		t.Fatalf("forget = %q, %v; want nothing else dropped", rep, err)
	}
	if exists(filepath.Join(mem, "alice", "facts", "food.md")) {
		t.Error("the file survived")
	}
	if n := core.Reflector.Pending(); n != 2 {
		t.Errorf("%d turns pending; want both kept", n)
	}
	journal, _ := os.ReadFile(filepath.Join(w.state, "reflector", "alice.jsonl"))
	if strings.Count(string(journal), `"forgotten":["facts/food.md"]`) != 2 {
		t.Errorf("the journal does not mark the file forgotten:\n%s", journal)
	}
	if n := core.Agent.ForgetUser("alice"); n != 2 {
		t.Errorf("%d turns of short-term history were left; want 2", n)
	}

	// Offline: the journal's turns are kept and marked the same way.
	core.Reflector.Close(context.Background())
	off := New(Wiring{StateDir: w.state, Store: core.Store, History: w.hist}, nil)
	put(t, filepath.Join(mem, "alice", "facts", "home.md"), "# Home\n> Summary: home\n\n- Paris\n")
	if _, err := off.Forget(context.Background(), Request{Owner: "alice", Path: "facts/home.md"}); err != nil {
		t.Fatal(err)
	}
	journal, _ = os.ReadFile(filepath.Join(w.state, "reflector", "alice.jsonl"))
	if strings.Count(string(journal), `"forgotten":["facts/food.md","facts/home.md"]`) != 2 {
		t.Errorf("offline, the journal does not mark the file forgotten:\n%s", journal)
	}
	// A journal that cannot be read stops the forget before the file goes.
	put(t, filepath.Join(mem, "bob", "facts", "x.md"), "# X\n> Summary: x\n")
	if err := os.MkdirAll(filepath.Join(w.state, "reflector", "bob.jsonl"), 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := off.Forget(context.Background(), Request{Owner: "bob", Path: "facts/x.md"}); err == nil ||
		!strings.Contains(err.Error(), "could not keep facts/x.md out of the turns waiting to be reflected") {
		t.Errorf("forget with an unreadable journal = %v", err)
	}
	if !exists(filepath.Join(mem, "bob", "facts", "x.md")) {
		t.Error("the file went although its turns could not be marked")
	}
}

func TestReportString(t *testing.T) {
	rep := Report{
		{N: 2, Noun: "message", Rest: " queued"}, {N: 0, Noun: "turn"}, {N: 1, Noun: "turn", Rest: " kept"},
		{N: 3, Noun: "turn", Rest: " said there", Verb: "detached the channel from"},
	}
	if want := "dropped 2 messages queued, 1 turn kept; detached the channel from 3 turns said there"; rep.String() != want {
		t.Errorf("%q, want %q", rep, want)
	}
}

func TestShow(t *testing.T) {
	w := newWorld(t)
	svc := w.offline()
	out, err := svc.Show("alice", chanKey)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"What I remember about you (2 files;", "[shared] facts/pets.md", "[private] episodes/2026-11.md",
		"```\n# Alice\n", "To delete everything: /memory forget all.",
		"What I remember about this channel (1 file,", "facts/decisions.md",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("Show lacks %q:\n%s", want, out)
		}
	}
	if out, _ := svc.Show("nobody", "#slack-T01-C09"); out != NothingYet+"\n\n"+NothingOfChannel {
		t.Errorf("Show of nothing = %q", out)
	}
	for _, c := range [][2]string{{"../x", ""}, {chanKey, ""}, {"alice", "#bad/name"}} {
		if _, err := svc.Show(c[0], c[1]); err == nil {
			t.Errorf("Show(%q, %q) gave no error", c[0], c[1])
		}
	}
}

func TestRead(t *testing.T) {
	svc := newWorld(t).offline()
	if text, err := svc.Read("alice", "facts/pets.md"); text != aliceFact || err != nil {
		t.Errorf("Read = %q, %v", text, err)
	}
	if _, err := svc.Read("alice", "facts/none.md"); !errors.Is(err, memory.ErrNotFound) {
		t.Errorf("Read of a missing file: %v", err)
	}
	if _, err := svc.Read("../x", "facts/pets.md"); err == nil {
		t.Error("Read of a bad name gave no error")
	}
}

func TestShowChat(t *testing.T) {
	w := newWorld(t)
	svc := w.offline()
	out, err := svc.ShowChat("alice")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"## What I remember about you, alice\n", "### alice's pets (facts/pets.md) [shared]\n- Has a cat called Zebra.",
		"### Recent work together (2 of 2, from episodes/2026-11.md [private])\n- 2026-11-20 Set up CI\n- 2026-11-03 Fixed the flaky test — a race in the cache\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("ShowChat lacks %q:\n%s", want, out)
		}
	}
	// Only facts: no episode heading. Only episodes: the title then the
	// episodes, no empty facts section.
	if out, err := svc.ShowChat(chanKey); err != nil || strings.Contains(out, "Recent work") || !strings.Contains(out, chanKey+"\n\n### what we chose") {
		t.Errorf("ShowChat of facts only = %q, %v", out, err)
	}
	bob, err := w.store.User("bob")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bob.Replace("episodes/2026-11.md", aliceEpisodes, memory.Version{}, nil); err != nil {
		t.Fatal(err)
	}
	if out, err := svc.ShowChat("bob"); err != nil || !strings.HasPrefix(out, "## What I remember about you, bob\n\n### Recent work together (2 of 2") {
		t.Errorf("ShowChat of episodes only = %q, %v", out, err)
	}
	if out, err := svc.ShowChat("nobody"); out != NothingYet || err != nil {
		t.Errorf("ShowChat of nobody = %q, %v", out, err)
	}
	if _, err := svc.ShowChat("../x"); err == nil {
		t.Error("ShowChat of a bad name gave no error")
	}
}

func TestExportAndHistory(t *testing.T) {
	w := newWorld(t)
	svc := w.offline()
	var buf bytes.Buffer
	rep, err := svc.Export("alice", &buf)
	if err != nil || rep.Files != 2 || buf.Len() == 0 {
		t.Errorf("export = %+v, %v", rep, err)
	}
	if _, err := svc.Export("../x", &buf); err == nil {
		t.Error("export of a bad name gave no error")
	}
	if _, _, err := w.hist.Record("alice", "facts/pets.md", []byte(aliceFact+"- And a dog.\n"), "test"); err != nil {
		t.Fatal(err)
	}
	if err := w.hist.RecordDelete("alice", "episodes/2026-11.md", []byte(aliceEpisodes), "test"); err != nil {
		t.Fatal(err)
	}
	cs, err := svc.History("alice", "")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range cs {
		got = append(got, c.Path+": "+c.Change)
	}
	slices.Sort(got) // versions kept in the same millisecond: any order
	want := []string{"episodes/2026-11.md: created, 9 lines", "episodes/2026-11.md: deleted", "facts/pets.md: +1 −0 lines", "facts/pets.md: created, 5 lines"}
	if !slices.Equal(got, want) {
		t.Errorf("history %q, want %q", got, want)
	}
	if _, err := svc.History("../x", ""); err == nil {
		t.Error("history of a bad name gave no error")
	}
	if _, err := New(Wiring{StateDir: w.state, Store: w.store}, nil).History("alice", ""); err == nil {
		t.Error("history without a history store gave no error")
	}
}
