package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"
	"go.uber.org/goleak"

	"github.com/mnemo-agent/mnemo/bots/discord/discordtest"
	"github.com/mnemo-agent/mnemo/bots/registry"
	"github.com/mnemo-agent/mnemo/bots/slack/slacktest"
	"github.com/mnemo-agent/mnemo/cmd/internal/app"
	"github.com/mnemo-agent/mnemo/cmd/internal/config"
)

// fakeAdapter stands in for a platform adapter in serve's tests.
type fakeAdapter struct {
	ready   atomic.Bool
	started chan struct{}
	err     error // returned at once when set
	stopped atomic.Bool
	// forget answers Forget (nil: nothing queued).
	forget func(user string) int
}

var _ adapter = (*fakeAdapter)(nil)

func (f *fakeAdapter) Forget(user string) int {
	if f.forget == nil {
		return 0
	}
	return f.forget(user)
}

// Run says it started once it is ready (or failed): a test that waited
// for started finds /readyz answered for it.
func (f *fakeAdapter) Run(ctx context.Context) error {
	if f.err != nil {
		close(f.started)
		return f.err
	}
	f.ready.Store(true)
	close(f.started)
	<-ctx.Done()
	f.ready.Store(false)
	f.stopped.Store(true)
	return nil
}

func (f *fakeAdapter) Ready() bool { return f.ready.Load() }

func serveEnv(w *chatWorld) (*cliEnv, *bytes.Buffer) {
	var logs bytes.Buffer
	return &cliEnv{getenv: func(k string) string { return w.env[k] }, stdin: strings.NewReader(""), stdout: io.Discard,
		stderr: &logs, logger: slog.New(slog.NewTextHandler(&logs, nil))}, &logs
}

func slackConfig(t *testing.T, w *chatWorld) *config.Config {
	t.Helper()
	w.env["SLACK_BOT_TOKEN"] = "xoxb-test"
	w.env["SLACK_APP_TOKEN"] = "xapp-test"
	cfg, err := config.Load("", false, func(k string) string { return w.env[k] }, registry.Platforms()...)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// fakeSlack starts a fake Slack (team T0TEAM, bot U0BOT) that takes the
// tokens bot and app, and points w's environment at it with them.
func (w *chatWorld) fakeSlack(t *testing.T, bot, app string) *slacktest.Server {
	slk := slacktest.New(t, slacktest.Options{BotToken: bot, AppToken: app, TeamID: "T0TEAM", BotUserID: "U0BOT"})
	w.env["SLACK_BOT_TOKEN"], w.env["SLACK_APP_TOKEN"], w.env["SLACK_API_URL"] = bot, app, slk.APIURL()
	return slk
}

// fakeDiscord starts a fake Discord and points w's environment at it,
// with the token it takes.
func (w *chatWorld) fakeDiscord(t *testing.T, opts discordtest.Options) *discordtest.Server {
	dsc := discordtest.New(t, opts)
	w.env["DISCORD_BOT_TOKEN"], w.env["DISCORD_API_URL"] = dsc.Options().Token, dsc.URL()
	return dsc
}

// listenLocal listens on a free port of 127.0.0.1.
func listenLocal(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// adapters builds the given front ends, whatever the config.
func adapters(list ...namedAdapter) buildAdapters {
	return func(*cliEnv, *config.Config, *app.App) ([]namedAdapter, error) { return list, nil }
}

// goServe runs serveWith on a free port of 127.0.0.1, whose address it
// returns, with the front ends build makes until ctx ends; the channel
// gets its result.
func goServe(t *testing.T, ctx context.Context, env *cliEnv, cfg *config.Config, build buildAdapters) (string, <-chan error) {
	t.Helper()
	ln := listenLocal(t)
	done := make(chan error, 1)
	go func() { done <- serveWith(ctx, env, cfg, nil, ln, build) }()
	return ln.Addr().String(), done
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestServeHealthAndGracefulStop(t *testing.T) {
	w := newChatWorld(t)
	cfg := slackConfig(t, w)
	env, logs := serveEnv(w)
	fa := &fakeAdapter{started: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	addr, done := goServe(t, ctx, env, cfg, adapters(namedAdapter{"fake", fa}))
	base := "http://" + addr
	<-fa.started // ready by then
	if code, body := get(t, base+"/healthz"); code != 200 || body != "ok\n" {
		t.Errorf("/healthz = %d %q", code, body)
	}
	if code, body := get(t, base+"/readyz"); code != 200 || !strings.HasPrefix(body, "ready") {
		t.Errorf("/readyz = %d %q", code, body)
	}
	// The container health check asks this serve, as the Dockerfile does.
	cli(t, nil, "--listen", addr, "healthcheck").want(t, 0, "ok\n", "")
	if code, body := get(t, base+"/metrics"); code != 200 || !strings.Contains(body, "\nmnemo_journal_pending_turns 0\n") || !strings.Contains(body, "\ngo_goroutines ") {
		t.Errorf("/metrics = %d %q", code, body)
	}
	fa.ready.Store(false)
	if code, body := get(t, base+"/readyz"); code != 503 || !strings.Contains(body, "not connected: fake") {
		t.Errorf("/readyz while disconnected = %d %q", code, body)
	}
	cancel() // SIGTERM
	if err := <-done; err != nil {
		t.Fatalf("serve after SIGTERM = %v", err)
	}
	if !fa.stopped.Load() || !strings.Contains(logs.String(), "serve: stopped") {
		t.Errorf("not a graceful stop:\n%s", logs.String())
	}
}

func TestServeAdapterFailure(t *testing.T) {
	w := newChatWorld(t)
	cfg := slackConfig(t, w)
	env, _ := serveEnv(w)
	ln := listenLocal(t)
	bad := &fakeAdapter{started: make(chan struct{}), err: errors.New("SLACK_BOT_TOKEN was refused")}
	good := &fakeAdapter{started: make(chan struct{})}
	err := serveWith(context.Background(), env, cfg, nil, ln, adapters(namedAdapter{"slack", bad}, namedAdapter{"other", good}))
	if code := exitCode(err, io.Discard); code != 1 || !strings.Contains(err.Error(), "slack: SLACK_BOT_TOKEN was refused") || !good.stopped.Load() {
		t.Fatalf("serve with a failing adapter = %v (exit %d), other stopped: %v", err, code, good.stopped.Load())
	}
	ln2 := listenLocal(t)
	err = serveWith(context.Background(), env, cfg, nil, ln2, func(*cliEnv, *config.Config, *app.App) ([]namedAdapter, error) {
		return nil, configError(errors.New("bad adapter config"))
	})
	if code := exitCode(err, io.Discard); code != 2 {
		t.Fatalf("build error = %v (exit %d)", err, code)
	}
}

func TestServeUsageAndConfig(t *testing.T) {
	w := newChatWorld(t)
	cli(t, w.env, "serve").want(t, 2, "", "no chat platform has tokens")
	cli(t, w.env, "serve", "extra").want(t, 2, "", `unexpected argument "extra"`)
	busy, _ := net.Listen("tcp", "127.0.0.1:0")
	defer busy.Close()
	env := map[string]string{"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_APP_TOKEN": "xapp-1", "MNEMO_DATA_DIR": w.env["MNEMO_DATA_DIR"], "OPENAI_BASE_URL": w.env["OPENAI_BASE_URL"]}
	cli(t, env, "serve", "--listen", busy.Addr().String()).want(t, 1, "", "cannot listen on "+busy.Addr().String())
	noLLM := map[string]string{"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_APP_TOKEN": "xapp-1", "MNEMO_DATA_DIR": w.env["MNEMO_DATA_DIR"], "MNEMO_OLLAMA_URL": "http://127.0.0.1:1/v1"}
	cli(t, noLLM, "serve", "--listen", "127.0.0.1:0").want(t, 2, "", "OPENAI_API_KEY")
}

// `mnemo serve` end to end: the real binary's code path, the real
// slack-go Socket Mode client against the fake Slack, the fake model. A
// DM is answered; SIGTERM finishes the reflection and exits 0; the next
// DM after a restart is answered from the memory the first one left.
func TestServeSlackEndToEnd(t *testing.T) {
	w := newChatWorld(t)
	slk := w.fakeSlack(t, "xoxb-test", "xapp-test")
	serve := func(connections int, text string, posts int) []slacktest.Post {
		t.Helper()
		ctx, cancel := context.WithCancel(context.Background())
		var errOut bytes.Buffer
		done := make(chan int, 1)
		go func() {
			err := run(stopOn(ctx), []string{"serve", "--listen", "127.0.0.1:0"}, func(k string) string { return w.env[k] }, strings.NewReader(""), io.Discard, &errOut)
			done <- exitCode(err, &errOut)
		}()
		if err := slk.WaitConnected(connections, 10*time.Second); err != nil {
			cancel()
			t.Fatalf("no Socket Mode connection: %v\n%s", err, errOut.String())
		}
		slk.Message(slacktest.MessageEvent{Channel: "D0DM", ChannelType: "im", User: "U0ADA", Text: text})
		if _, err := slk.WaitPosts(posts, 10*time.Second); err != nil {
			cancel()
			t.Fatalf("no reply: %v\n%s", err, errOut.String())
		}
		cancel() // SIGTERM: the reply is finished before serve exits
		if code := <-done; code != 0 {
			t.Fatalf("serve exit %d after SIGTERM:\n%s", code, errOut.String())
		}
		return slk.Replies() // as they show (a streamed reply is posted, then updated)
	}
	posts := serve(1, "Hello, I'm Ada Lovelace.", 1)
	if posts[0].Channel != "D0DM" || posts[0].Text != "Noted." {
		t.Fatalf("reply %+v", posts[0])
	}
	// SIGTERM waited for the reflection: the memory is on disk.
	if got := w.file(t, "slack-T0TEAM-U0ADA/facts/user.md"); !strings.Contains(got, "- Name: Ada Lovelace") {
		t.Fatalf("memory after serve stopped: %q", got)
	}
	posts = serve(2, "What's my name?", 2)
	if posts[1].Text != "Your name is Ada Lovelace." {
		t.Fatalf("reply after restart %+v", posts[1])
	}
}

// A bot token Slack refuses stops serve with exit 1 and a message naming
// the variable and the fix; nothing is left running.
func TestServeSlackRefusedToken(t *testing.T) {
	w := newChatWorld(t)
	w.fakeSlack(t, "xoxb-real", "xapp-real")
	w.env["SLACK_BOT_TOKEN"] = "xoxb-revoked"
	r := cli(t, w.env, "serve", "--listen", "127.0.0.1:0")
	r.want(t, 1, "", "SLACK_BOT_TOKEN was refused by Slack (invalid_auth)")
	if strings.Contains(r.stderr, "xoxb-revoked") {
		t.Error("the token appears in the output")
	}
	w.env["SLACK_APP_TOKEN"] = "xoxb-wrong-kind"
	cli(t, w.env, "serve").want(t, 2, "", "SLACK_APP_TOKEN must start with xapp-")
}

// Slack and Discord in one `mnemo serve`, against both fakes, with one
// person linked on both: what mnemo learns from her in Slack is known when
// she asks in Discord, in the same running process.
func TestServeSlackAndDiscordTogether(t *testing.T) {
	w := newChatWorld(t)
	const adaDiscord = "80351110224678912"
	cfgFile := "reflector:\n  idle: 1ms\nidentities:\n  ada: [\"slack:T0TEAM/U0ADA\", \"discord:" + adaDiscord + "\"]\n"
	if err := os.WriteFile(filepath.Join(w.dir, "mnemo.yaml"), []byte(cfgFile), 0o600); err != nil {
		t.Fatal(err)
	}
	slk := w.fakeSlack(t, "xoxb-test", "xapp-test")
	dsc := w.fakeDiscord(t, discordtest.Options{})

	ln := listenLocal(t)
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var errOut syncWriter
	done := make(chan int, 1)
	go func() {
		err := run(stopOn(ctx), []string{"serve", "--listen", addr}, func(k string) string { return w.env[k] }, strings.NewReader(""), io.Discard, &errOut)
		done <- exitCode(err, &errOut)
	}()
	if err := slk.WaitConnected(1, 10*time.Second); err != nil {
		t.Fatalf("no Socket Mode connection: %v\n%s", err, errOut.String())
	}
	if err := dsc.WaitReady(1, 10*time.Second); err != nil {
		t.Fatalf("no Discord session: %v\n%s", err, errOut.String())
	}
	// Each adapter is ready before it logs its connection.
	errOut.waitLogged(t, 10*time.Second, "serve: running", "slack: connected to Socket Mode", "discord: connected to the gateway")
	if code, body := get(t, "http://"+addr+"/readyz"); code != 200 {
		t.Fatalf("/readyz = %d %q\n%s", code, body, errOut.String())
	}

	slk.Message(slacktest.MessageEvent{Channel: "D0DM", ChannelType: "im", User: "U0ADA", Text: "Hello, I'm Ada Lovelace."})
	if posts, err := waitSlackReply(slk, 0, "Noted."); err != nil {
		t.Fatalf("Slack reply %+v, %v\n%s", posts, err, errOut.String())
	}
	// The reflection (idle 1ms) writes the fact to the shared memory user.
	errOut.waitLogged(t, 10*time.Second, "reflection: memory updated")
	if b, _ := os.ReadFile(filepath.Join(w.dir, "data", "memory", "ada", "facts", "user.md")); !strings.Contains(string(b), "Ada Lovelace") {
		t.Fatalf("the Slack fact was not written: %q\n%s", b, errOut.String())
	}
	dsc.MessageCreate(discordgo.Message{ChannelID: "300000000000000004", Author: &discordgo.User{ID: adaDiscord, Username: "ada"}, Content: "What's my name?"})
	posts, err := dsc.WaitPosts(1, 10*time.Second)
	if err == nil { // a streamed reply is posted at its first words, then edited
		_, err = dsc.WaitMessage(posts[0].ChannelID, posts[0].Message.ID, 10*time.Second,
			func(m discordgo.Message) bool { return m.Content == "Your name is Ada Lovelace." })
	}
	if err != nil {
		t.Fatalf("Discord reply %+v, %v\n%s", posts, err, errOut.String())
	}
	// The metrics moved with each message, model call, tool call and write.
	// A streamed reply may show whole before the task has ended: its
	// "replied" comes after.
	errOut.waitLogged(t, 10*time.Second, "discord: replied")
	// A run is counted once it has ended (after the roll-up look that
	// follows a reflection): "reflection: done".
	errOut.waitLogged(t, 10*time.Second, "reflection: done")
	_, body := get(t, "http://"+addr+"/metrics")
	for _, want := range []string{
		`mnemo_messages_received_total{platform="slack"} 1`,
		`mnemo_messages_received_total{platform="discord"} 1`,
		`mnemo_replies_sent_total{platform="slack"} 1`,
		`mnemo_replies_sent_total{platform="discord"} 1`,
		`mnemo_tasks_in_flight{platform="slack"} 0`,
		`mnemo_llm_request_duration_seconds_count{role="reflector"} `,
		`mnemo_tool_calls_total{result="ok",tool="memory_read"} `,
		`mnemo_memory_writes_total{op="create",outcome="ok"} 1`,
		`mnemo_journal_pending_turns `,
		`mnemo_queue_depth{platform="slack"} 0`,
		`mnemo_reflections_total{outcome="ok"} `,
		`process_resident_memory_bytes `,
	} {
		if !strings.Contains(body, "\n"+want) {
			t.Errorf("/metrics lacks %q:\n%s", want, body)
		}
	}
	// The Discord task may still be finishing after its post: 0 or 1.
	for _, re := range []string{`\nmnemo_queue_depth\{platform="discord"\} [01]\n`, `\nmnemo_llm_requests_total\{outcome="ok",role="thinker"\} [2-9]\n`, `\nmnemo_llm_requests_total\{outcome="ok",role="reflector"\} [1-9]\n`} {
		if !regexp.MustCompile(re).MatchString(body) {
			t.Errorf("/metrics does not match %s", re)
		}
	}
	cancel() // SIGTERM
	if code := <-done; code != 0 {
		t.Fatalf("serve exit %d after SIGTERM:\n%s", code, errOut.String())
	}
	if dsc.OpenConnections() != 0 {
		t.Error("the gateway connection is still open")
	}
}

// A Discord token the gateway refuses, and a missing intent, stop serve
// with exit 1 and the fix.
func TestServeDiscordFatal(t *testing.T) {
	w := newChatWorld(t)
	no := false
	w.fakeDiscord(t, discordtest.Options{MessageContentAllowed: &no})
	cli(t, w.env, "serve", "--listen", "127.0.0.1:0").want(t, 1, "", "Message Content Intent")
	w.env["DISCORD_BOT_TOKEN"] = "revoked-token"
	r := cli(t, w.env, "serve", "--listen", "127.0.0.1:0")
	r.want(t, 1, "", "DISCORD_BOT_TOKEN was refused")
	if strings.Contains(r.stderr, "revoked-token") {
		t.Error("the token appears in the output")
	}
}

// syncWriter is a bytes.Buffer safe for the writes of serve's goroutines
// or a child process's output; every write wakes the waiters, which look
// again (no polling).
type syncWriter struct {
	mu      sync.Mutex
	b       bytes.Buffer
	changed chan struct{}
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.changed != nil {
		close(s.changed)
		s.changed = nil
	}
	return s.b.Write(p)
}

func (s *syncWriter) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Changed is closed at the next write.
func (s *syncWriter) Changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.changed == nil {
		s.changed = make(chan struct{})
	}
	return s.changed
}

// waitFor waits until the log holds n occurrences of str, or fails the
// test.
func (s *syncWriter) waitFor(t *testing.T, str string, n int) {
	t.Helper()
	if !waitCond(30*time.Second, s.Changed, func() bool { return strings.Count(s.String(), str) >= n }) {
		t.Fatalf("waited 30s for %d× %q in the log:\n%s", n, str, s.String())
	}
}

// waitLogged waits until every one of lines was written.
func (s *syncWriter) waitLogged(t *testing.T, timeout time.Duration, lines ...string) {
	t.Helper()
	waitUntil(t, fmt.Sprintf("the logs %q", lines), timeout, s.Changed, func() bool {
		out := s.String()
		for _, l := range lines {
			if !strings.Contains(out, l) {
				return false
			}
		}
		return true
	})
}

// TestStopHTTPAfterASecondSignal: after a second signal the health server
// stops at once, cutting a request under way, where a graceful stop would
// wait for it.
func TestStopHTTPAfterASecondSignal(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	entered, release := make(chan struct{}), make(chan struct{})
	srv := &http.Server{Handler: http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		close(entered)
		<-release
	})}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	got := make(chan error, 1)
	go func() {
		resp, err := http.Get("http://" + ln.Addr().String() + "/readyz")
		if err == nil {
			resp.Body.Close()
		}
		got <- err
	}()
	<-entered
	stopHTTP(context.Background(), srv, true)
	if err := <-got; err == nil {
		t.Error("the request under way was answered, not cut")
	}
	close(release)
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		t.Errorf("Serve returned %v", err)
	}
}

// waitSlackReply waits until reply i of the bot (slacktest.Replies: a
// streamed reply as it shows after its updates) shows want.
func waitSlackReply(slk *slacktest.Server, i int, want string) ([]slacktest.Post, error) {
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	for {
		changed := slk.Changed()
		rs := slk.Replies()
		if len(rs) > i && rs[i].Text == want {
			return rs, nil
		}
		select {
		case <-changed:
		case <-deadline.C:
			return rs, fmt.Errorf("reply %d never showed %q", i, want)
		}
	}
}
