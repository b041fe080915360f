package wiring

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/agent/llm"
	"github.com/mnemo-agent/mnemo/agent/llm/llmtest"
	"github.com/mnemo-agent/mnemo/agent/logtest"
	"github.com/mnemo-agent/mnemo/memory"
	"github.com/mnemo-agent/mnemo/reflector"
)

func coreOptions(t *testing.T, model *llmtest.Script) Options {
	dir := t.TempDir()
	return Options{
		Thinker: model, Reflector: model, ThinkerModel: "m", ReflectorModel: "m",
		Store:    memory.Options{Dir: filepath.Join(dir, "memory")},
		StateDir: filepath.Join(dir, "state"),
		Reflect:  reflector.Config{MaxTurns: 100},
	}
}

// handle gives ann's message text to c's agent, which must answer it.
func handle(t *testing.T, c *Core, text string) {
	t.Helper()
	if r, err := c.Agent.Handle(context.Background(), mnemo.Task{User: "ann", Platform: "console", Text: text}); err != nil || r.Failed {
		t.Fatalf("Handle(%q) = %+v, %v", text, r, err)
	}
}

// closeCore closes c, which must reflect what is pending and close the
// store without error.
func closeCore(t *testing.T, c *Core) {
	t.Helper()
	if rerr, err := c.Close(context.Background()); rerr != nil || err != nil {
		t.Fatalf("Close = %v, %v", rerr, err)
	}
}

// The core's turns go to the reflector, but for those SkipTurn keeps
// back; Close reflects what is pending, then closes the store.
func TestCoreOpenTurnsClose(t *testing.T) {
	model := llmtest.New(llmtest.Text("hello"), llmtest.Text("hi again"), llmtest.Text("nothing to remember"))
	o := coreOptions(t, model)
	o.Observer = skipper{}
	c, err := Open(o)
	if err != nil {
		t.Fatal(err)
	}
	handle(t, c, "hi")
	handle(t, c, "skip me")
	if n := c.Reflector.Pending(); n != 1 {
		t.Errorf("pending turns %d, want 1 (the skipped one is not journaled)", n)
	}
	closeCore(t, c)
	if model.Pending() != 0 {
		t.Errorf("the reflection at Close did not run: %d replies left", model.Pending())
	}
	// A turn the reflector cannot take (it is closed) is counted as lost.
	c.Agent.Handle(context.Background(), mnemo.Task{User: "ann", Platform: "console", Text: "late"})
	if c.Lost() != 1 {
		t.Errorf("lost %d, want 1", c.Lost())
	}
}

func TestCoreOpenErrors(t *testing.T) {
	// No store folder can be made under a file.
	o := coreOptions(t, llmtest.New())
	file := filepath.Join(t.TempDir(), "file")
	os.WriteFile(file, nil, 0o600)
	o.Store.Dir = filepath.Join(file, "memory")
	if _, err := Open(o); err == nil {
		t.Error("Open with a store under a file: no error")
	}
	// The journal's folder under a file: the store is closed again.
	o = coreOptions(t, llmtest.New())
	o.StateDir = filepath.Join(file, "state")
	if _, err := Open(o); err == nil || !strings.Contains(err.Error(), "open the reflection journal in "+o.StateDir) {
		t.Errorf("Open with a journal under a file: %v", err)
	}
	// No Thinker model: a wiring mistake.
	o = coreOptions(t, llmtest.New())
	o.Thinker = nil
	if _, err := Open(o); err == nil {
		t.Error("Open without a model: no error")
	}
}

// Close with its context done leaves the pending turns journaled and says so.
func TestCoreCloseCancelled(t *testing.T) {
	model := llmtest.New(llmtest.Text("hello"))
	c, err := Open(coreOptions(t, model))
	if err != nil {
		t.Fatal(err)
	}
	c.Agent.Handle(context.Background(), mnemo.Task{User: "ann", Platform: "console", Text: "hi"})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rerr, err := c.Close(ctx)
	if rerr == nil || err != nil {
		t.Errorf("Close(cancelled) = %v, %v; want the reflector's error", rerr, err)
	}
	if rerr, _ := c.Close(context.Background()); rerr != nil {
		t.Errorf("a second Close: %v", rerr)
	}
}

// NopObserver observes nothing and reflects every turn; the tests embed
// it to observe only some of the core.
type NopObserver struct{}

func (NopObserver) Turn(mnemo.Turn) bool   { return true }
func (NopObserver) ToolCall(string, error) {}
func (NopObserver) Reflection(string)      {}
func (NopObserver) Change(memory.Commit)   {}

var _ Observer = NopObserver{}

// skipper keeps back the turns whose message is "skip me".
type skipper struct{ NopObserver }

func (skipper) Turn(t mnemo.Turn) bool { return t.UserText != "skip me" }

// toolCalls records the memory tool calls it is told of.
type toolCalls struct {
	NopObserver
	calls *[]string
}

func (o toolCalls) ToolCall(tool string, err error) {
	*o.calls = append(*o.calls, fmt.Sprintf("%s:%v", tool, err != nil))
}

// The Observer hears each memory tool call the Thinker makes.
func TestCoreToolCalls(t *testing.T) {
	model := llmtest.New(llmtest.Calls(llm.ToolCall{ID: "c1", Name: "memory_read", Arguments: `{"path":"facts/x.md"}`}), llmtest.Text("done"))
	o := coreOptions(t, model)
	var calls []string
	o.Observer = toolCalls{calls: &calls}
	c, err := Open(o)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	if r, err := c.Agent.Handle(context.Background(), mnemo.Task{User: "ann", Platform: "console", Text: "read"}); err != nil || r.Text != "done" {
		t.Fatalf("Handle = %+v, %v", r, err)
	}
	if strings.Join(calls, ",") != "memory_read:true" { // the file does not exist
		t.Errorf("tool calls %v", calls)
	}
}

// A reflection's request does not grow with the memory: with 10,000 fact
// and episode files (each index past its budget) the reflector's request
// — system prompt, pre-load, one turn, tool definitions — stays under
// 24 KB, and says how many files it left out.
func TestReflectionRequestBoundedAtAnySize(t *testing.T) {
	model := llmtest.New(llmtest.Text("hello"), llmtest.Text("nothing to remember"))
	o := coreOptions(t, model)
	for i := range 5000 {
		for _, f := range []struct{ path, text string }{
			{fmt.Sprintf("facts/topic-%04d.md", i), fmt.Sprintf("# Topic %d\n\n> Summary: what Ann said about topic %d\n\n- a fact about it\n", i, i)},
			{fmt.Sprintf("episodes/%04d-01.md", 9999-i), fmt.Sprintf("# Month %d\n\n> Summary: what we did in month %d\n\n## 01\n\n- work\n", i, i)},
		} {
			p := filepath.Join(o.Store.Dir, "ann", f.path)
			if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(f.text), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	c, err := Open(o)
	if err != nil {
		t.Fatal(err)
	}
	handle(t, c, "hi")
	closeCore(t, c)
	reqs := model.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model requests, want the reply and one reflection", len(reqs))
	}
	size, text := 0, ""
	for _, m := range reqs[1].Messages {
		size += len(m.Content)
		text += m.Content
	}
	tools, err := json.Marshal(reqs[1].Tools)
	if err != nil {
		t.Fatal(err)
	}
	size += len(tools)
	t.Logf("reflection request at 10,000 files: %d bytes", size)
	if size > 24<<10 {
		t.Errorf("the reflection request is %d bytes at 10,000 files", size)
	}
	for _, want := range []string{"more files not shown; see memory_list", "episodes/9999-01.md", "facts/topic-0000.md"} {
		if !strings.Contains(text, want) {
			t.Errorf("the reflection request lacks %q", want)
		}
	}
}

// What Open is given reaches the store: the logger (a leftover temp file
// removed at the first listing of its folder is logged), the fault hook (a write goes through it)
// and the index cache in the state folder (written at Close); a turn
// journaled well is not counted as lost.
func TestCoreOptionsReachTheStore(t *testing.T) {
	model := llmtest.New(llmtest.Text("hello"), llmtest.Text("nothing to remember"))
	o := coreOptions(t, model)
	var logs logtest.Buffer
	o.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	var mu sync.Mutex
	var ops []string
	o.Faults = func(op, name string) error {
		mu.Lock()
		defer mu.Unlock()
		ops = append(ops, op+" "+name)
		return nil
	}
	o.Store.Watch = true // a watching store keeps its index for the next start
	o.Store.Clean = true // and one that cleans logs the leftovers it removes
	leftover := filepath.Join(o.Store.Dir, "ann", "facts", ".user.md.mnemo-tmp-0123456789abcdef")
	if err := os.MkdirAll(filepath.Dir(leftover), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(leftover, []byte("half"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Open(o)
	if err != nil {
		t.Fatal(err)
	}
	u, err := c.Store.User("ann")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := u.List(); err != nil { // the first listing of ann's folders removes it
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "removed leftover temp file") {
		t.Errorf("the store did not log to the core's logger:\n%s", logs.String())
	}
	if _, err := u.Write("facts/user.md", "# Ann\n\n> Summary: Ann\n", nil, nil); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	hooked := len(ops)
	mu.Unlock()
	if hooked == 0 {
		t.Error("the store's write did not go through the core's fault hook")
	}
	handle(t, c, "hi")
	if c.Lost() != 0 {
		t.Errorf("lost %d turns, want 0", c.Lost())
	}
	closeCore(t, c)
	if _, err := os.Stat(filepath.Join(o.StateDir, "index")); err != nil {
		t.Errorf("no index cache in the state folder: %v", err)
	}
}

// recorder notes everything an Observer is told.
type recorder struct {
	mu     sync.Mutex
	events []string
}

func (r *recorder) note(s string) { r.mu.Lock(); r.events = append(r.events, s); r.mu.Unlock() }

func (r *recorder) Turn(t mnemo.Turn) bool { r.note("turn:" + t.UserText); return true }
func (r *recorder) ToolCall(tool string, err error) {
	r.note(fmt.Sprintf("tool:%s:%v", tool, err != nil))
}
func (r *recorder) Reflection(outcome string) { r.note("reflection:" + outcome) }
func (r *recorder) Change(c memory.Commit)    { r.note("change:" + c.User + ":" + c.Path) }

// One Observer, set once, hears the turns, the reflections and the
// changes to the files (a write through the store here).
func TestObserverHearsTheCore(t *testing.T) {
	model := llmtest.New(llmtest.Text("hello"), llmtest.Text("nothing to remember"))
	o := coreOptions(t, model)
	rec := &recorder{}
	o.Observer = rec
	c, err := Open(o)
	if err != nil {
		t.Fatal(err)
	}
	handle(t, c, "hi")
	u, err := c.Store.User("ann")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := u.Write("facts/pets.md", "# Pets\n> Summary: pets\n\n## Cat\nZebra.\n", nil, nil); err != nil {
		t.Fatal(err)
	}
	closeCore(t, c)
	got := strings.Join(rec.events, ",")
	for _, want := range []string{"turn:hi", "change:ann:facts/pets.md", "reflection:ok"} {
		if !strings.Contains(got, want) {
			t.Errorf("the observer heard %q; want %q among it", got, want)
		}
	}
}
