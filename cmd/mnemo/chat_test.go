package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mnemo-agent/mnemo/agent/openaitest"
	"github.com/mnemo-agent/mnemo/cmd/internal/config"
	"github.com/mnemo-agent/mnemo/memory"
)

// brain is a deterministic stand-in for a model: it decides what to call
// and what to answer only from what it is sent, so an answer that names a
// remembered fact proves the fact travelled through memory files.
type brain struct {
	mu          sync.Mutex
	reflections []string // transcripts the reflector was given
}

var (
	nameRe    = regexp.MustCompile(`I'm ([A-Z][a-z]+ [A-Z][a-z]+)`)
	factRe    = regexp.MustCompile(`- Name: (.+)`)
	entryRe   = regexp.MustCompile(`## (.+)`)
	todayRe   = regexp.MustCompile(`Today's date: (\d{4}-\d{2})-\d{2}`)
	episodeRe = regexp.MustCompile(`episodes/\d{4}-\d{2}\.md`)
)

func toolJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func (b *brain) handle(r openaitest.Request) (openaitest.Reply, bool) {
	msgs := r.Chat.Messages
	last := msgs[len(msgs)-1]
	if strings.Contains(r.System(), "memory reflector") {
		if last.Role == "tool" {
			return openaitest.Text("saved"), true
		}
		tr := r.LastUser()
		b.mu.Lock()
		b.reflections = append(b.reflections, tr)
		b.mu.Unlock()
		if m := nameRe.FindStringSubmatch(tr); m != nil {
			return openaitest.ToolCalls(openaitest.Call("memory_write", toolJSON(map[string]string{
				"path": "facts/user.md", "content": "# User Facts\n\n> Summary: user name\n\n- Name: " + m[1] + "\n"}))), true
		}
		if strings.Contains(tr, "we fixed") {
			month := todayRe.FindStringSubmatch(tr)[1]
			return openaitest.ToolCalls(openaitest.Call("memory_append", toolJSON(map[string]string{
				"path":  "episodes/" + month + ".md",
				"entry": "## Logger stdout leak fix\n- Summary: pino leak → custom transport\n- Date: " + month + "-15\n- Solution: custom line transport\n"}))), true
		}
		return openaitest.Text("nothing to remember"), true
	}
	if last.Role == "tool" {
		if m := factRe.FindStringSubmatch(last.Content); m != nil {
			return openaitest.Text("Your name is " + m[1] + "."), true
		}
		if m := entryRe.FindAllStringSubmatch(last.Content, -1); m != nil {
			return openaitest.Text("Last time we fixed: " + m[len(m)-1][1] + "."), true
		}
		return openaitest.Text("I found nothing useful."), true
	}
	index := ""
	for _, m := range msgs {
		if m.Role == "user" && strings.HasPrefix(m.Content, "Available memory") {
			index = m.Content
		}
	}
	user := r.LastUser()
	switch {
	case strings.Contains(user, "my name") && strings.Contains(index, "facts/user.md"):
		return openaitest.ToolCalls(openaitest.Call("memory_read", `{"path":"facts/user.md"}`)), true
	case strings.Contains(user, "bug") && episodeRe.MatchString(index):
		return openaitest.ToolCalls(openaitest.Call("memory_read", toolJSON(map[string]string{"path": episodeRe.FindString(index)}))), true
	case strings.Contains(user, "my name"):
		return openaitest.Text("I don't know your name yet."), true
	}
	return openaitest.Text("Noted."), true
}

func (b *brain) transcripts() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.reflections...)
}

// chatWorld is a data folder and a model server for chat runs.
type chatWorld struct {
	dir   string
	env   map[string]string
	srv   *openaitest.Server
	brain *brain
}

func newChatWorld(t *testing.T) *chatWorld {
	t.Helper()
	dir := inTempDir(t)
	srv := openaitest.New(t)
	b := &brain{}
	srv.Handle(b.handle)
	return &chatWorld{dir: dir, srv: srv, brain: b, env: map[string]string{
		"OPENAI_BASE_URL": srv.URL(), "OPENAI_API_KEY": "sk-test-key-123456",
		"MNEMO_DATA_DIR": filepath.Join(dir, "data", "memory"),
	}}
}

// chat runs `mnemo chat` with the given input and returns the result.
func (w *chatWorld) chat(t *testing.T, input string, args ...string) cliResult {
	t.Helper()
	var out, errOut bytes.Buffer
	err := run(stopOn(context.Background()), append([]string{"chat"}, args...), func(k string) string { return w.env[k] }, strings.NewReader(input), &out, &errOut)
	return cliResult{exitCode(err, &errOut), out.String(), errOut.String()}
}

// child runs this test binary again in w's folder, only the test named
// test, with this process's environment, then env, then w's.
func (w *chatWorld) child(test string, env ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.count=1")
	cmd.Dir = w.dir
	cmd.Env = append(os.Environ(), env...)
	for k, v := range w.env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	return cmd
}

func (w *chatWorld) file(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(w.dir, "data", "memory", rel))
	if err != nil {
		t.Fatalf("memory file %s: %v", rel, err)
	}
	return string(b)
}

// Acceptance 1 and 3: a name told in one run is answered after a restart,
// and the file it lives in reads well in an editor.
func TestAcceptanceRemembersAcrossRestarts(t *testing.T) {
	w := newChatWorld(t)
	r := w.chat(t, "Hello, I'm Zhang San and I write Go.\n", "--user", "zhangsan")
	r.want(t, 0, "Noted.\n", "")
	// The line ends with where it was learned: the terminal, today.
	if got := w.file(t, "zhangsan/facts/user.md"); memory.StripStamps(got) != "# User Facts\n\n> Summary: user name\n\n- Name: Zhang San\n" ||
		!strings.Contains(got, "- Name: Zhang San <!-- src: terminal · 20") {
		t.Fatalf("facts/user.md = %q", got)
	}
	// A new process: nothing survives but the files.
	r = w.chat(t, "What's my name?\n", "--user", "zhangsan")
	r.want(t, 0, "Your name is Zhang San.\n", "")
	// The index was a user message in the first request of the task, and
	// appears once in the follow-up request after the tool call.
	reqs := w.srv.Requests()
	var thinker []openaitest.Request
	for _, q := range reqs {
		if !strings.Contains(q.System(), "memory reflector") && strings.Contains(q.LastUser(), "What's my name?") {
			thinker = append(thinker, q)
		}
	}
	if len(thinker) != 2 {
		t.Fatalf("expected 2 model calls for the question, got %d", len(thinker))
	}
	for i, q := range thinker {
		idx := 0
		for _, m := range q.Chat.Messages {
			if strings.HasPrefix(m.Content, "Available memory:") {
				idx++
				if m.Role != "user" || !strings.Contains(m.Content, "- facts/user.md (") {
					t.Errorf("call %d: index message %q with role %s", i, m.Content, m.Role)
				}
			}
		}
		if idx != 1 || strings.Contains(q.System(), "Available memory") {
			t.Errorf("call %d: index appears %d times (system prompt has it: %v)", i, idx, strings.Contains(q.System(), "Available memory"))
		}
	}
	// Acceptance 3: the admin check finds nothing to complain about.
	cli(t, w.env, "memory", "check").want(t, 0, "", "")
	cli(t, w.env, "memory", "show", "zhangsan", "facts/user.md").want(t, 0, "- Name: Zhang San", "")
}

// Acceptance 2: past work is recalled from the episode the reflector wrote.
func TestAcceptanceRemembersPastWork(t *testing.T) {
	w := newChatWorld(t)
	w.chat(t, "The logger leaked to stdout; we fixed it with a custom line transport.\n", "--user", "ada").want(t, 0, "Noted.", "")
	month := time.Now().Format("2006-01")
	ep := w.file(t, "ada/episodes/"+month+".md")
	if !strings.HasPrefix(memory.StripStamps(ep), "# "+month+" Episodes\n\n> Summary: pino leak → custom transport\n\n## Logger stdout leak fix\n") ||
		!strings.Contains(ep, "## Logger stdout leak fix <!-- src: terminal · "+month) {
		t.Fatalf("episode file:\n%s", ep)
	}
	w.chat(t, "What bug did we fix last time?\n", "--user", "ada").want(t, 0, "Last time we fixed: Logger stdout leak fix.", "")
}

// Acceptance 4: a hand edit made while mnemo runs is what the next answer uses.
func TestAcceptanceHandEditUsedAtOnce(t *testing.T) {
	w := newChatWorld(t)
	p := filepath.Join(w.dir, "data", "memory", "zhangsan", "facts", "user.md")
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	// Debug logs say when the watcher saw an edit: the test waits for that
	// instead of guessing how long it takes.
	putFile(t, filepath.Join(w.dir, "mnemo.yaml"), "log:\n  level: debug\n")
	// The folder is there (watched from the start), so the file's own
	// events are what the watcher sees.
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	var logs syncWriter
	seen := func(op string) func() bool {
		n := strings.Count(logs.String(), `path=facts/user.md op=`+op)
		return func() bool { return strings.Count(logs.String(), `path=facts/user.md op=`+op) > n }
	}
	done := make(chan error, 1)
	go func() {
		err := run(stopOn(context.Background()), []string{"chat", "--user", "zhangsan"}, func(k string) string { return w.env[k] }, inR, outW, &logs)
		outW.Close()
		done <- err
	}()
	lines := bufio.NewReader(outR)
	ask := func() string {
		fmt.Fprintln(inW, "What's my name?")
		line, err := lines.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the reply: %v", err)
		}
		return line
	}
	if got := ask(); got != "I don't know your name yet.\n" {
		t.Fatalf("first answer %q", got)
	}
	// An admin writes the file by hand: the next index lists it.
	written := seen("WRITE")
	putFile(t, p, "# User Facts\n\n> Summary: user name\n\n- Name: Zhang San\n")
	waitUntil(t, "the watcher to see the new file", 10*time.Second, logs.Changed, written)
	if got := ask(); got != "Your name is Zhang San.\n" {
		t.Fatalf("answer after the file was created %q", got)
	}
	// An admin fixes the name in vim: the file is replaced by a rename.
	tmp := p + ".new"
	putFile(t, tmp, "# User Facts\n\n> Summary: user name\n\n- Name: Zhang Wei\n")
	renamed := seen("CREATE")
	if err := os.Rename(tmp, p); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the watcher to see the edit", 10*time.Second, logs.Changed, renamed)
	if got := ask(); got != "Your name is Zhang Wei.\n" {
		t.Fatalf("answer after the edit %q", got)
	}
	inW.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// Casual chat still goes to the reflector (no keyword pre-filter) and the
// model's judgement writes nothing.
func TestCasualChatWritesNothing(t *testing.T) {
	w := newChatWorld(t)
	w.chat(t, "hi there\nnice weather today\n", "--user", "bob").want(t, 0, "Noted.\nNoted.\n", "")
	tr := w.brain.transcripts()
	if len(tr) != 1 || !strings.Contains(tr[0], "hi there") || !strings.Contains(tr[0], "nice weather today") {
		t.Fatalf("one reflection over both turns expected, got %q", tr)
	}
	if _, err := os.Stat(filepath.Join(w.dir, "data", "memory", "bob")); !os.IsNotExist(err) {
		t.Fatalf("casual chat created memory: %v", err)
	}
}

func TestChatUsageAndLLMErrors(t *testing.T) {
	w := newChatWorld(t)
	w.chat(t, "", "--user", "../bob").want(t, 2, "", "chat: --user: bad memory user name")
	w.chat(t, "", "extra").want(t, 2, "", `unexpected argument "extra"`)
	w.chat(t, "", "--nope").want(t, 2, "", "unknown flag")

	noLLM := map[string]string{"MNEMO_DATA_DIR": w.env["MNEMO_DATA_DIR"], "MNEMO_OLLAMA_URL": "http://127.0.0.1:1/v1"}
	var errOut bytes.Buffer
	err := run(stopOn(context.Background()), []string{"chat"}, func(k string) string { return noLLM[k] }, strings.NewReader("hi\n"), io.Discard, &errOut)
	if code := exitCode(err, &errOut); code != 2 || !strings.Contains(errOut.String(), "OPENAI_API_KEY") || !strings.Contains(errOut.String(), "OPENAI_BASE_URL") || !strings.Contains(errOut.String(), "mnemo init") {
		t.Fatalf("no LLM: exit %d, %s", code, errOut.String())
	}
	// Nothing was created: no lock, no state or memory folder (issue 25,
	// item 6: the lock was left behind). serve the same.
	if exists(filepath.Join(w.dir, "data")) {
		t.Fatalf("a chat without a model created %s", filepath.Join(w.dir, "data"))
	}
	noLLM["SLACK_BOT_TOKEN"], noLLM["SLACK_APP_TOKEN"] = "xoxb-1", "xapp-1"
	errOut.Reset()
	err = run(stopOn(context.Background()), []string{"serve", "--listen", "127.0.0.1:0"}, func(k string) string { return noLLM[k] }, strings.NewReader(""), io.Discard, &errOut)
	if code := exitCode(err, &errOut); code != 2 || exists(filepath.Join(w.dir, "data")) {
		t.Fatalf("serve without a model: exit %d, created %v: %s", code, exists(filepath.Join(w.dir, "data")), errOut.String())
	}

	// With neither variable set but a local Ollama answering, it is used.
	ollama := map[string]string{"MNEMO_DATA_DIR": w.env["MNEMO_DATA_DIR"], "MNEMO_OLLAMA_URL": w.srv.URL(), "USER": "ci-runner"}
	var out bytes.Buffer
	errOut.Reset()
	err = run(stopOn(context.Background()), []string{"chat"}, func(k string) string { return ollama[k] }, strings.NewReader("hello\n"), &out, &errOut)
	if err != nil || out.String() != "Noted.\n" || !strings.Contains(errOut.String(), "using local Ollama at "+w.srv.URL()) {
		t.Fatalf("ollama fallback: %v %q %q", err, out.String(), errOut.String())
	}
	// Without --user, $USER names the memory user.
	last := w.srv.Requests()[len(w.srv.Requests())-1]
	if !strings.Contains(last.LastUser(), "ci-runner") {
		t.Errorf("$USER not used as the memory user: %q", last.LastUser())
	}
}

func TestChatDefaultUserAndModelFailure(t *testing.T) {
	w := newChatWorld(t)
	w.env["USER"] = "not valid!"
	w.srv.Handle(func(r openaitest.Request) (openaitest.Reply, bool) {
		if strings.Contains(r.System(), "memory reflector") {
			return openaitest.Text("nothing to remember"), true
		}
		if r.LastUser() == "again" {
			return openaitest.Text("Hi."), true
		}
		return openaitest.Error(400, "invalid_request_error", "bad request"), true
	})
	// The person is told what went wrong; a piped chat that could not
	// answer exits 1. The turn answered is reflected (the failed one is not).
	r := w.chat(t, "hello\nagain\n")
	r.want(t, 1, "The model server at "+w.srv.URL()+" refused the request (HTTP 400): bad request. Check that it supports chat completions with tools for the model \"gpt-4o-mini\" (MNEMO_MODEL).\nHi.\n", "1 message(s) could not be answered")
	reqs := w.srv.Requests()
	if tr := reqs[len(reqs)-1].LastUser(); strings.Contains(tr, "hello") {
		t.Errorf("the unanswered message was reflected: %q", tr)
	}
	if !strings.Contains(reqs[len(reqs)-1].LastUser(), `USER ("console")`) {
		t.Errorf("default user: %q", reqs[len(reqs)-1].LastUser())
	}
}

func TestChatStateDirProblem(t *testing.T) {
	w := newChatWorld(t)
	putFile(t, filepath.Join(w.dir, "data", "state"), "a file where the state folder goes")
	w.chat(t, "hi\n").want(t, 1, "", "mnemo: state folder "+filepath.Join(w.dir, "data", "state")+": mkdir "+filepath.Join(w.dir, "data", "state")+": not a directory (it holds mnemo's lock and journals and must be a folder mnemo may write; set state.dir elsewhere)")
	putFile(t, filepath.Join(w.dir, "blocked"), "x")
	w.env["MNEMO_DATA_DIR"] = filepath.Join(w.dir, "blocked", "memory")
	w.chat(t, "hi\n").want(t, 1, "", "mnemo: state folder "+filepath.Join(w.dir, "blocked", "state")+": mkdir "+filepath.Join(w.dir, "blocked")+": not a directory")
}

// A crash between the reply and the reflection loses nothing: the turn was
// journaled before the reply was printed and is reflected at the next start.
func TestCrashBetweenReplyAndReflection(t *testing.T) {
	if os.Getenv("MNEMO_CHAT_CHILD") == "1" {
		return
	}
	w := newChatWorld(t)
	putFile(t, filepath.Join(w.dir, "mnemo.yaml"), "reflector:\n  idle: 1h\n")
	cmd := w.child("TestChatChild", "MNEMO_CHAT_CHILD=1")
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(stdin, "Hello, I'm Zhang San.")
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "Noted.\n" {
		t.Fatalf("child reply %q, %v\n%s", line, err, stderr.String())
	}
	cmd.Process.Signal(syscall.SIGKILL) // the reply is out; the reflection has not run
	cmd.Wait()
	if len(w.brain.transcripts()) != 0 {
		t.Fatal("the reflection ran before the crash; the test proves nothing")
	}
	w.chat(t, "", "--user", "zhangsan").want(t, 0, "", "")
	if got := w.file(t, "zhangsan/facts/user.md"); !strings.Contains(got, "- Name: Zhang San") {
		t.Fatalf("journaled turn not reflected after restart: %q", got)
	}
}

// TestChatChild is `mnemo chat --user zhangsan` as a separate process for
// the crash test.
func TestChatChild(t *testing.T) {
	if os.Getenv("MNEMO_CHAT_CHILD") != "1" {
		t.Skip("runs only as the crash test's child process")
	}
	err := run(stopOn(context.Background()), []string{"chat", "--user", "zhangsan"}, os.Getenv, os.Stdin, os.Stdout, os.Stderr)
	os.Exit(exitCode(err, os.Stderr))
}

// A piped chat writes the replies alone to stdout and nothing but warnings
// and errors to stderr; --verbose brings the info lines back.
func TestPipedChatIsQuiet(t *testing.T) {
	w := newChatWorld(t)
	w.chat(t, "Hello, I'm Zhang San.\n", "--user", "zhangsan").want(t, 0, "Noted.\n", "")
	r := w.chat(t, "What's my name?\n", "--user", "zhangsan")
	if r.code != 0 || r.stdout != "Your name is Zhang San.\n" || r.stderr != "" {
		t.Errorf("piped chat: %d %q %q", r.code, r.stdout, r.stderr)
	}
	w.chat(t, "What's my name?\n", "--user", "zhangsan", "--verbose").want(t, 0, "Your name is Zhang San.\n", "level=INFO msg=\"mnemo: ready\"")
}

// /memory shows what is remembered (fact text, the newest episodes with
// their dates), never the model's instruction lines; /forget asks first,
// /forget yes deletes; /help lists the commands.
func TestChatMemoryForgetHelp(t *testing.T) {
	w := newChatWorld(t)
	w.chat(t, "Hello, I'm Zhang San.\n", "--user", "zhangsan").want(t, 0, "Noted.\n", "")
	ep := filepath.Join(w.dir, "data", "memory", "zhangsan", "episodes", "2026-11.md")
	os.MkdirAll(filepath.Dir(ep), 0o755)
	os.WriteFile(ep, []byte("# Episodes 2026-11\n> Summary: flaky tests\n\n## Fixed the flaky test\n- Summary: a race in the cache\n- Date: 2026-11-03\n\n## Set up CI\n- Summary: GitHub Actions\n- Date: 2026-11-20\n"), 0o644)
	r := w.chat(t, "/memory\n/memory why Zhang\n/help\n/forget\n", "--user", "zhangsan")
	for _, want := range []string{
		// /memory why: the line, where it was learned (the terminal, the
		// reflection's day) and its history.
		"`facts/user.md:5` - Name: Zhang San\n  from: terminal, 20",
		"(reflector); file last changed",
		"## What I remember about you, zhangsan\n",
		"### user name (facts/user.md) [private]\n- Name: Zhang San\n",
		"### Recent work together (2 of 2, from episodes/2026-11.md [private])\n- 2026-11-20 Set up CI — GitHub Actions\n- 2026-11-03 Fixed the flaky test — a race in the cache\n",
		"/memory                what mnemo remembers about you, each file private or shared\n",
		"This deletes **everything** I remember about you (every fact and episode file). It cannot be undone.\nType **/forget yes** to confirm (within 10 minutes); anything else cancels.\n",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("chat output lacks %q:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "memory_read") || strings.Contains(r.stdout, "# User Facts") {
		t.Errorf("/memory shows instructions or raw titles:\n%s", r.stdout)
	}
	if _, err := os.Stat(ep); err != nil {
		t.Fatal("/forget without yes deleted something")
	}
	w.chat(t, "/forget yes\n/memory\n", "--user", "zhangsan").want(t, 0, "Done: I deleted everything I remembered about you.\nI don't remember anything about you yet.\n", "")
	w.chat(t, "/forget yes\n", "--user", "zhangsan").want(t, 0, "There was nothing to forget", "")
}

// The terminal chat: /memory marks each file, /memory share and /memory
// private change the chat's own person's file on disk.
func TestChatMemoryShare(t *testing.T) {
	w := newChatWorld(t)
	w.putMemory(t, "zhangsan/facts/food.md", foodFact)
	w.putMemory(t, "lisi/facts/food.md", foodFact)
	r := w.chat(t, "/memory share facts/food.md\n/memory\n/memory private `facts/food.md`\n/memory share facts/nope.md\n/memory share ../lisi/facts/food.md\n", "--user", "zhangsan")
	for _, want := range []string{
		"`facts/food.md` is now shared with channels: I may use it in any channel you talk to me in.\n",
		"### food likes (facts/food.md) [shared]\n- Likes ramen\n",
		"I use [private] files only when we talk in private (here, and in DMs), [shared] ones in Slack and Discord channels too.",
		"`facts/food.md` is now private: I use it only when we talk in private, never in a channel.\n",
		"You have no memory file `facts/nope.md`; `/memory` lists yours. Nothing was changed.\n",
		"`../lisi/facts/food.md` is not a memory file.",
	} {
		if r.code != 0 || !strings.Contains(r.stdout, want) {
			t.Errorf("chat output lacks %q:\n%s\n%s", want, r.stdout, r.stderr)
		}
	}
	if strings.Contains(r.stdout, "> Visibility") {
		t.Errorf("/memory shows the visibility line:\n%s", r.stdout)
	}
	if got := w.file(t, "zhangsan/facts/food.md"); !strings.Contains(got, "> Visibility: private") {
		t.Errorf("zhangsan's file: %q", got)
	}
	if got := w.file(t, "lisi/facts/food.md"); got != foodFact {
		t.Errorf("lisi's file changed: %q", got)
	}
	if len(w.srv.Requests()) != 0 {
		t.Error("a /memory command reached the model")
	}
	// A memory folder that is a file: /memory says so, share finds nothing.
	w.putMemory(t, "wangwu", "not a folder")
	r = w.chat(t, "/memory\n/memory share facts/food.md\n", "--user", "wangwu")
	if !strings.Contains(r.stdout, "Sorry, I couldn't read what I remember about you just now.") || !strings.Contains(r.stdout, "couldn't change `facts/food.md`") ||
		!strings.Contains(r.stderr, "/memory cannot read the memory") || !strings.Contains(r.stderr, "wangwu is a special file, not a folder") {
		t.Errorf("a broken folder:\n%s\n%s", r.stdout, r.stderr)
	}
}

// TestTellSaving: at the end of an interactive chat the person is told
// that the reflections run first; after a signal, for how long at most
// and how to quit at once.
func TestTellSaving(t *testing.T) {
	var out bytes.Buffer
	env := &cliEnv{stderr: &out}
	cfg := &config.Config{Shutdown: config.Shutdown{Grace: 7 * time.Second}}
	tellSaving(context.Background(), env, cfg)
	if out.String() != "mnemo: saving what is worth remembering…\n" {
		t.Errorf("at the end of input: %q", out.String())
	}
	out.Reset()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	tellSaving(ctx, env, cfg)
	if want := "\nmnemo: saving what is worth remembering (up to 7s; Ctrl-C again to quit now, and the rest is saved next time)…\n"; out.String() != want {
		t.Errorf("after a signal: %q, want %q", out.String(), want)
	}
}

// A piped chat whose model is down says each problem once: the reply
// says why it failed, stderr one line for the unanswered message; no log
// lines repeating it (issue 25, item 4: six lines for one cause). A turn
// whose reply never came is not reflected, so no reflection fails after
// it (issue 34, item 12).
func TestChatSaysEachProblemOnce(t *testing.T) {
	w := newChatWorld(t)
	ln := listenLocal(t)
	dead := "http://" + ln.Addr().String() + "/v1"
	ln.Close()
	env := maps.Clone(w.env)
	env["OPENAI_BASE_URL"] = dead
	var out, errOut bytes.Buffer
	err := run(stopOn(context.Background()), []string{"chat", "--user", "alice"}, func(k string) string { return env[k] }, strings.NewReader("hi\n"), &out, &errOut)
	code := exitCode(err, &errOut)
	lines := strings.Split(strings.TrimSuffix(errOut.String(), "\n"), "\n")
	if code != 1 || len(lines) != 1 || !strings.Contains(out.String(), "connection refused") ||
		lines[0] != "mnemo: 1 message(s) could not be answered; the replies say why" {
		t.Fatalf("exit %d\nstdout %q\nstderr:\n%s", code, out.String(), errOut.String())
	}
	// --verbose keeps the log lines.
	errOut.Reset()
	err = run(stopOn(context.Background()), []string{"chat", "--user", "alice", "--verbose"}, func(k string) string { return env[k] }, strings.NewReader("hi\n"), &out, &errOut)
	if exitCode(err, &errOut) != 1 || !strings.Contains(errOut.String(), `msg="agent: task failed"`) ||
		strings.Count(errOut.String(), "not reflected: the reply never came") != 1 || strings.Contains(errOut.String(), "reflection: failed") {
		t.Fatalf("--verbose:\n%s", errOut.String())
	}
}

// Three messages the model never answered leave nothing behind: no turn
// to reflect, so no reflection given up on later (an ERROR), and memory
// check exits 0. Before the fix each was journaled, its reflection failed
// as the reply had, and after three runs it was given up on.
func TestUnansweredMessagesLeaveNothing(t *testing.T) {
	w := newChatWorld(t)
	ln := listenLocal(t)
	dead := "http://" + ln.Addr().String() + "/v1"
	ln.Close()
	env := maps.Clone(w.env)
	env["OPENAI_BASE_URL"] = dead
	for range 3 {
		var out, errOut bytes.Buffer
		err := run(stopOn(context.Background()), []string{"chat", "--user", "alice"}, func(k string) string { return env[k] }, strings.NewReader("I'm Alice\n"), &out, &errOut)
		if code := exitCode(err, &errOut); code != 1 {
			t.Fatalf("exit %d\n%s", code, errOut.String())
		}
	}
	r := w.chat(t, "Hello, I'm Zhang San and I write Go.\n", "--user", "alice", "--verbose")
	if r.code != 0 || strings.Contains(r.stderr, "given up") || strings.Contains(r.stderr, "level=ERROR") {
		t.Fatalf("a chat after three unanswered messages: exit %d\n%s", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(w.dir, "data", "state", "reflector", "failed")); !os.IsNotExist(err) {
		t.Errorf("reflections given up on were kept: %v", err)
	}
	cli(t, w.env, "memory", "check").want(t, 0, "", "")
}
