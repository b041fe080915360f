package main

import (
	"context"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/bots/registry"
	"github.com/mnemo-agent/mnemo/cmd/internal/userdata"
	memhistory "github.com/mnemo-agent/mnemo/memory/history"
)

// The markers of what alice and bob said: each appears only in their data.
const aliceMark, bobMark = "ZEBRA7731ALICE", "QUOKKA4412BOB"

// personWorld is a data folder where every place that keeps a person's
// data holds some of alice's and of bob's, each with their marker: memory
// files, their history and index cache, the reflection journal, the
// reflections given up on, the Slack and Discord intake journals and the
// terminal chat's line history. It returns the world, its configuration
// and the places that hold alice's data.
func personWorld(t *testing.T) (*chatWorld, *cliEnv, []string) {
	t.Helper()
	w := newChatWorld(t)
	cfg := slackConfig(t, w)
	data, state := filepath.Join(w.dir, "data", "memory"), filepath.Join(w.dir, "data", "state")
	h, err := memhistory.Open(memhistory.Options{Dir: filepath.Join(state, "history")})
	if err != nil {
		t.Fatal(err)
	}
	var slack, discord strings.Builder
	for i, p := range []string{"alice", "bob"} {
		mark := map[string]string{"alice": aliceMark, "bob": bobMark}[p]
		fact := "# " + p + "\n> summary: " + p + " keeps " + mark + "\n\n- Has a pet called " + mark + ".\n"
		putFile(t, filepath.Join(data, p, "facts", "user.md"), fact)
		if _, _, err := h.Record(p, "facts/user.md", []byte(fact), "reflector (task t1)"); err != nil {
			t.Fatal(err)
		}
		putFile(t, filepath.Join(state, "chat", p+".history"), "my pet is "+mark+"\n")
		putFile(t, filepath.Join(state, "reflector", "failed", p+"-20260101T000000Z-r1.jsonl"),
			`{"kind":"turn","user_text":"`+mark+`"}`+"\n"+`{"kind":"failed","user":"`+p+`","error":"the model failed"}`+"\n")
		fmt.Fprintf(&slack, `{"op":"add","id":"1700000000.00000%d","user":"%s","at":"2026-01-01T00:00:00Z","data":{"text":"%s"}}`+"\n", i, p, mark)
		fmt.Fprintf(&discord, `{"op":"add","id":"11111111111111111%d","user":"%s","at":"2026-01-01T00:00:00Z","data":{"text":"%s"}}`+"\n", i, p, mark)
	}
	h.Close()
	putFile(t, filepath.Join(state, "intake", "slack.jsonl"), slack.String())
	putFile(t, filepath.Join(state, "intake", "discord.jsonl"), discord.String())
	env, _ := serveEnv(w)
	a, err := openApp(context.Background(), env, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"alice", "bob"} {
		if _, err := a.Show(p, ""); err != nil { // builds the index, cached at Close
			t.Fatal(err)
		}
	}
	a.Close(cancelledContext())
	for _, p := range []string{"alice", "bob"} { // turns a stopped process left journaled
		mark := map[string]string{"alice": aliceMark, "bob": bobMark}[p]
		leaveTurn(t, w, mnemo.Turn{TaskID: "t-" + p, User: p, Platform: "console", UserText: "My pet is " + mark + ".", ReplyText: "Noted."})
	}
	places := []string{
		filepath.Join(data, "alice", "facts", "user.md"),
		filepath.Join(state, "chat", "alice.history"),
		filepath.Join(state, "index", "alice.idx"),
		filepath.Join(state, "intake", "discord.jsonl"),
		filepath.Join(state, "intake", "slack.jsonl"),
		filepath.Join(state, "reflector", "alice.jsonl"),
		filepath.Join(state, "reflector", "failed", "alice-20260101T000000Z-r1.jsonl"),
	}
	got := traces(t, filepath.Join(w.dir, "data"), "alice", aliceMark)
	for _, want := range places {
		if !slices.Contains(got, want) {
			t.Fatalf("fixture: alice has nothing in %s; her traces: %q", want, got)
		}
	}
	if !slices.ContainsFunc(got, func(p string) bool { return strings.HasPrefix(p, filepath.Join(state, "history", "alice")) }) {
		t.Fatalf("fixture: alice has no history; her traces: %q", got)
	}
	return w, env, places
}

// traces walks the whole folder root and returns every file (or folder)
// whose name or content holds one of needles.
func traces(t *testing.T, root string, needles ...string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		hit := func(s string) bool {
			return slices.ContainsFunc(needles, func(n string) bool { return strings.Contains(s, n) })
		}
		if rel, _ := filepath.Rel(root, p); hit(rel) {
			out = append(out, p)
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if hit(string(b)) {
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// bobsData is every file with bob's name or marker, and its content.
func bobsData(t *testing.T, w *chatWorld) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, p := range traces(t, filepath.Join(w.dir, "data"), "bob", bobMark) {
		b, _ := os.ReadFile(p)
		out[p] = string(b)
	}
	return out
}

// After `mnemo memory forget alice --yes` with no process running, no
// byte of alice is left anywhere in the data folder — not her name, not
// what she said — and bob's data is as it was.
func TestForgetLeavesNoTraceOffline(t *testing.T) {
	w, _, _ := personWorld(t)
	bob := bobsData(t, w)
	cli(t, w.env, "memory", "forget", "alice", "--yes").want(t, 0,
		"deleted all memory of alice: the folder "+filepath.Join(w.dir, "data", "memory", "alice")+" and its 1 memory file; "+
			"also dropped 1 message queued for an answer on slack, 1 message queued for an answer on discord, "+
			"1 turn waiting to be reflected, 1 reflection given up on\n", "")
	if got := traces(t, filepath.Join(w.dir, "data"), "alice", aliceMark); len(got) > 0 {
		t.Errorf("alice's forget left traces of her in %q", got)
	}
	after := bobsData(t, w)
	for p, text := range bob {
		if strings.Contains(p, "intake") { // shared with alice's: rewritten without her
			if !strings.Contains(after[p], bobMark) {
				t.Errorf("bob's queued message went with alice's forget: %s is %q", p, after[p])
			}
			continue
		}
		if after[p] != text {
			t.Errorf("alice's forget changed bob's %s:\n%q\nwant\n%q", p, after[p], text)
		}
	}
}

// The same while serve runs: the forget goes through its control socket,
// and nothing of alice is left, then or after serve stops (its shutdown
// reflects the turns still pending: none of hers).
func TestForgetLeavesNoTraceWhileServeRuns(t *testing.T) {
	w, env, _ := personWorld(t)
	cfg := slackConfig(t, w)
	bob := bobsData(t, w)
	fa := &fakeAdapter{started: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	_, done := goServe(t, ctx, env, cfg, adapters(namedAdapter{"fake", fa}))
	<-fa.started
	cli(t, w.env, "memory", "forget", "alice", "--yes").want(t, 0,
		"also dropped 1 message queued for an answer on slack, 1 message queued for an answer on discord, "+
			"1 turn waiting to be reflected, 1 reflection given up on (done by process", "")
	if got := traces(t, filepath.Join(w.dir, "data"), "alice", aliceMark); len(got) > 0 {
		t.Errorf("alice's forget left traces of her in %q", got)
	}
	left := traces(t, filepath.Join(w.dir, "data"), "bob", bobMark)
	for _, p := range slices.Sorted(maps.Keys(bob)) {
		if !slices.Contains(left, p) {
			t.Errorf("alice's forget took bob's %s", p)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := traces(t, filepath.Join(w.dir, "data"), "alice", aliceMark); len(got) > 0 {
		t.Errorf("serve's shutdown brought alice back in %q", got)
	}
}

// The running chat or serve and the offline `mnemo memory` forget with
// the same holders, in the same order (userdata.Holders): serve only adds
// the queue of an adapter that has no intake journal of its own.
func TestRunningAndOfflineHoldersAreOneList(t *testing.T) {
	w := newChatWorld(t)
	cfg := slackConfig(t, w)
	env, _ := serveEnv(w)
	a, err := openApp(context.Background(), env, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(cancelledContext())
	store, err := openAdminStore(cfg, env.logger, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	mem, done, err := (&memoryCmd{env: env, cfg: cfg, store: store}).data(true)
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	names := func(hs []userdata.Holder) (out []string) {
		for _, h := range hs {
			out = append(out, h.Name())
		}
		return out
	}
	running, offline := names(a.Holders()), names(mem.Holders())
	if !slices.Equal(running, offline) || len(running) < 9 {
		t.Errorf("running holders %q, offline %q", running, offline)
	}
	a.UseAdapters(appAdapters([]namedAdapter{{"slack", &fakeAdapter{}}, {"fake", &fakeAdapter{}}}))
	filed := 0 // the registered journals a forget finds offline (the terminal's is in memory)
	for _, p := range registry.Platforms() {
		if p.ForgetQueued != nil {
			filed++
		}
	}
	if got := names(a.Holders()); !slices.Equal(got, slices.Insert(slices.Clone(offline), filed, "intake journal (fake)")) {
		t.Errorf("serve's holders %q", got)
	}
}
