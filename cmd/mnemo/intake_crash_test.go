package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/mnemo-agent/mnemo/agent/openaitest"
	"github.com/mnemo-agent/mnemo/bots/discord/discordtest"
	"github.com/mnemo-agent/mnemo/bots/slack/slacktest"
)

// These tests kill a real `mnemo serve` (this test binary run again as
// TestIntakeChildProcess, on the real serve code path) with SIGKILL in the
// middle of a burst of DMs, start it again on the same data folder, and
// check that every message it took is answered (or told busy) exactly
// once: none lost with the process, none answered twice after the restart.

const crashWait = 60 * time.Second

// busyText is the adapters' reply past the queue bound (chat.BusyReplyText).
const busyText = "I'm still working on your earlier messages; please wait for my answer and try again."

// TestIntakeChildProcess is `mnemo serve` in a child process of the crash
// tests: run as main runs it (SIGTERM and SIGINT stop it gracefully).
func TestIntakeChildProcess(t *testing.T) {
	if os.Getenv("MNEMO_INTAKE_CHILD") != "1" {
		t.Skip("runs only as the child process of the intake crash tests")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(stopOn(ctx), []string{"serve", "--listen", "127.0.0.1:0"}, os.Getenv, strings.NewReader(""), os.Stdout, os.Stderr)
	stop()
	os.Exit(exitCode(err, os.Stderr))
}

// serveChild is a running child `mnemo serve`.
type serveChild struct {
	cmd  *exec.Cmd
	logs *syncWriter
	done chan error
}

// startServe starts `mnemo serve` in dir with exactly env (besides what
// the test binary needs) and kills it at the end of the test if it still
// runs.
func startServe(t *testing.T, dir string, env map[string]string) *serveChild {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestIntakeChildProcess$", "-test.count=1")
	cmd.Dir = dir
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); !strings.HasPrefix(k, "MNEMO_") && !strings.HasPrefix(k, "OPENAI_") &&
			!strings.HasPrefix(k, "SLACK_") && !strings.HasPrefix(k, "DISCORD_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "MNEMO_INTAKE_CHILD=1")
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	c := &serveChild{cmd: cmd, logs: &syncWriter{}, done: make(chan error, 1)}
	cmd.Stdout, cmd.Stderr = c.logs, c.logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { c.done <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			<-c.done
		}
		if t.Failed() {
			t.Logf("serve (pid %d) logs, last 6000 bytes:\n%s", cmd.Process.Pid, tail(c.logs.String(), 6000))
		}
	})
	return c
}

// kill sends SIGKILL and waits for the process to be gone.
func (c *serveChild) kill(t *testing.T) {
	t.Helper()
	if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-c.done
}

// stop sends SIGTERM and wants exit 0.
func (c *serveChild) stop(t *testing.T) {
	t.Helper()
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-c.done:
		if err != nil {
			t.Fatalf("serve after SIGTERM: %v", err)
		}
	case <-time.After(crashWait):
		t.Fatal("serve did not stop after SIGTERM")
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// waitUntil waits until cond holds (see waitCond), or fails the test
// naming what it waited for.
func waitUntil(t *testing.T, what string, timeout time.Duration, changed func() <-chan struct{}, cond func() bool) {
	t.Helper()
	if !waitCond(timeout, changed, cond) {
		t.Fatalf("timed out waiting for %s", what)
	}
}

// waitCond reports whether cond held within timeout, checking it again
// each time changed (taken before each check) is closed: the fakes record
// in the parent, and the child's state is only seen through them and its
// logs.
func waitCond(timeout time.Duration, changed func() <-chan struct{}, cond func() bool) bool {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		next := changed()
		if cond() {
			return true
		}
		select {
		case <-next:
		case <-deadline.C:
			return false
		}
	}
}

// slowModel is the model: the reflector is answered at once, a task only
// once the gate is open, with "Re: <token>" naming the message.
type slowModel struct {
	gate chan struct{}
	once sync.Once
}

var tokenRe = regexp.MustCompile(`m-[0-9]+-[0-9]+`)

func newSlowModel(t *testing.T) (*slowModel, *openaitest.Server) {
	m := &slowModel{gate: make(chan struct{})}
	srv := openaitest.New(t)
	srv.Handle(func(r openaitest.Request) (openaitest.Reply, bool) {
		if strings.Contains(r.System(), "memory reflector") {
			return openaitest.Text("nothing to remember"), true
		}
		<-m.gate
		return openaitest.Text("Re: " + tokenRe.FindString(r.LastUser())), true
	})
	t.Cleanup(m.open) // or the server cannot close
	return m, srv
}

func (m *slowModel) open() { m.once.Do(func() { close(m.gate) }) }

// intakeWorld is a data folder for the child processes.
func intakeWorld(t *testing.T, llm *openaitest.Server) (string, map[string]string) {
	t.Helper()
	dir := t.TempDir()
	// No reflection while the test runs (they would only add model calls).
	if err := os.WriteFile(filepath.Join(dir, "mnemo.yaml"), []byte("reflector:\n  idle: 1h\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir, map[string]string{
		"OPENAI_BASE_URL": llm.URL(), "OPENAI_API_KEY": "sk-test-key-123456",
		"MNEMO_DATA_DIR": filepath.Join(dir, "data", "memory"),
	}
}

// 600 Slack DMs (60 people, 10 each: past the queue bound of 8 per
// conversation) while the model is slow; SIGKILL once some replies are
// out; restart. Every message whose envelope was acknowledged is answered
// or told busy, exactly once — and, as the fake redelivers what was not
// acknowledged, so is every message.
func TestIntakeCrashSlack(t *testing.T) {
	if testing.Short() {
		t.Skip("starts mnemo serve twice and sends 600 messages")
	}
	const people, each = 60, 10
	model, llm := newSlowModel(t)
	slk := slacktest.New(t, slacktest.Options{RedeliverAfter: 3 * time.Second})
	dir, env := intakeWorld(t, llm)
	env["SLACK_BOT_TOKEN"], env["SLACK_APP_TOKEN"], env["SLACK_API_URL"] = slk.Options().BotToken, slk.Options().AppToken, slk.APIURL()

	first := startServe(t, dir, env)
	if err := slk.WaitConnected(1, crashWait); err != nil {
		t.Fatal(err)
	}
	type dm struct{ channel, ts, token string }
	var sent []dm
	for n := range each {
		for p := range people {
			sent = append(sent, dm{channel: fmt.Sprintf("D%03d", p), ts: slk.NextTS(), token: fmt.Sprintf("m-%d-%d", p, n)})
		}
	}
	burst := make(chan struct{})
	go func() { // the burst goes on while the process is killed
		defer close(burst)
		for i, d := range sent {
			slk.Message(slacktest.MessageEvent{Channel: d.channel, User: fmt.Sprintf("U%03d", i%people), TS: d.ts,
				Text: "hello " + d.token})
		}
	}()
	waitUntil(t, "a third of the messages acknowledged", crashWait, slk.Changed, func() bool { return len(slk.Acks()) >= len(sent)/3 })
	model.open() // the model answers from now on
	if _, err := slk.WaitPosts(100, crashWait); err != nil {
		t.Fatal(err)
	}
	first.kill(t)
	acked := ackedMessages(slk)
	postsBefore := len(slk.Posts())
	t.Logf("killed with %d of %d messages acknowledged and %d replies posted", len(acked), len(sent), postsBefore)
	if len(acked) == 0 || postsBefore >= len(sent) {
		t.Fatalf("the kill came too early or too late to test anything: %d acked, %d posted", len(acked), postsBefore)
	}

	<-burst
	second := startServe(t, dir, env)
	replies := func() map[string][]slacktest.Post {
		out := map[string][]slacktest.Post{}
		for _, p := range slk.Posts() {
			var meta struct {
				EventPayload struct {
					ReplyTo string `json:"reply_to"`
				} `json:"event_payload"`
			}
			json.Unmarshal([]byte(p.Params.Get("metadata")), &meta)
			out[meta.EventPayload.ReplyTo] = append(out[meta.EventPayload.ReplyTo], p)
		}
		return out
	}
	key := func(d dm) string { return "msg:T0TEAM/" + d.channel + "/" + d.ts }
	waitUntil(t, "every message answered", crashWait, slk.Changed, func() bool {
		r := replies()
		for _, d := range sent {
			if len(r[key(d)]) == 0 {
				return false
			}
		}
		return true
	})
	second.stop(t) // SIGTERM: finishes what it took, so nothing is posted after this

	r := replies()
	final := finalSlackTexts(slk)
	for _, d := range sent {
		ps := r[key(d)]
		switch {
		case len(ps) != 1:
			t.Errorf("%s (acknowledged: %v) answered %d times: %+v", d.token, acked[d.ts], len(ps), ps)
		case ps[0].Channel != d.channel || ps[0].ThreadTS != "":
			t.Errorf("%s answered in %s/%s", d.token, ps[0].Channel, ps[0].ThreadTS)
		case final(ps[0]) != "Re: "+d.token && final(ps[0]) != busyText:
			t.Errorf("%s answered %q", d.token, final(ps[0]))
		}
	}
	if n := len(r[""]); n != 0 {
		t.Errorf("%d posts are not replies to a message", n)
	}
	// The same, by text alone: in each DM every message has its own answer
	// or one busy reply, no more.
	perChannel := map[string]map[string]int{}
	for _, p := range slk.Posts() {
		if perChannel[p.Channel] == nil {
			perChannel[p.Channel] = map[string]int{}
		}
		perChannel[p.Channel][final(p)]++
	}
	for p := range people {
		texts := perChannel[fmt.Sprintf("D%03d", p)]
		total := 0
		for text, n := range texts {
			total += n
			if text != busyText && n != 1 {
				t.Errorf("D%03d: %q posted %d times", p, text, n)
			}
		}
		if total != each {
			t.Errorf("D%03d: %d posts for %d messages: %v", p, total, each, texts)
		}
	}
	t.Logf("%d replies (%d busy), %d posted after the restart (%d of them finishing a reply the kill interrupted), %d acks in all",
		len(slk.Posts()), countText(slk.Posts(), busyText), len(slk.Posts())-postsBefore,
		strings.Count(second.logs.String(), "finishing a reply interrupted"), len(slk.Acks()))
}

// finalSlackTexts gives what a post shows now: a streamed reply is posted
// at its first words and then updated (chat.update).
func finalSlackTexts(slk *slacktest.Server) func(slacktest.Post) string {
	updated := map[string]string{}
	for _, u := range slk.Chat("chat.update") {
		updated[u.Channel+"/"+u.TS] = u.Text
	}
	return func(p slacktest.Post) string {
		if t, ok := updated[p.Channel+"/"+p.TS]; ok {
			return t
		}
		return p.Text
	}
}

// ackedMessages is the ts of every message one of whose envelopes was
// acknowledged.
func ackedMessages(slk *slacktest.Server) map[string]bool {
	env := map[string]string{}
	for _, e := range slk.Sent() {
		env[e.ID] = e.TS
	}
	out := map[string]bool{}
	for _, a := range slk.Acks() {
		if ts := env[a.EnvelopeID]; ts != "" {
			out[ts] = true
		}
	}
	return out
}

func countText(posts []slacktest.Post, text string) int {
	n := 0
	for _, p := range posts {
		if p.Text == text {
			n++
		}
	}
	return n
}

var receivedRe = regexp.MustCompile(`msg="discord: message received".* message_id=([0-9]+)`)

// 120 Discord DMs (12 people, 10 each) while the model is slow; SIGKILL
// once every one was received and some replies are out; restart. Discord
// delivers a message once, so every message received is answered or told
// busy exactly once after the restart.
func TestIntakeCrashDiscord(t *testing.T) {
	if testing.Short() {
		t.Skip("starts mnemo serve twice")
	}
	const people, each = 12, 10
	model, llm := newSlowModel(t)
	dsc := discordtest.New(t, discordtest.Options{})
	dir, env := intakeWorld(t, llm)
	env["DISCORD_BOT_TOKEN"], env["DISCORD_API_URL"] = dsc.Options().Token, dsc.URL()

	first := startServe(t, dir, env)
	if err := dsc.WaitReady(1, crashWait); err != nil {
		t.Fatal(err)
	}
	tokens := map[string]string{} // message id → token
	channel := map[string]string{}
	for n := range each {
		for p := range people {
			token := fmt.Sprintf("m-%d-%d", p, n)
			m := dsc.MessageCreate(discordgo.Message{ChannelID: fmt.Sprint(300000000000000100 + p), Content: "hello " + token,
				Author: &discordgo.User{ID: fmt.Sprint(80351110224678900 + p), Username: fmt.Sprint("user", p)}})
			tokens[m.ID], channel[m.ID] = token, m.ChannelID
		}
	}
	received := func() map[string]bool {
		out := map[string]bool{}
		for _, m := range receivedRe.FindAllStringSubmatch(first.logs.String(), -1) {
			out[m[1]] = true
		}
		return out
	}
	waitUntil(t, "every message received", crashWait, first.logs.Changed, func() bool { return len(received()) == len(tokens) })
	model.open()
	if _, err := dsc.WaitPosts(40, crashWait); err != nil {
		t.Fatal(err)
	}
	first.kill(t)
	postsBefore := len(dsc.Posts())
	if postsBefore >= len(tokens) {
		t.Fatalf("every message was answered before the kill: this tests nothing")
	}

	second := startServe(t, dir, env)
	replies := func() map[string][]discordtest.Post {
		out := map[string][]discordtest.Post{}
		for _, p := range dsc.Posts() {
			ref := ""
			if p.Body.Reference != nil {
				ref = p.Body.Reference.MessageID
			}
			out[ref] = append(out[ref], p)
		}
		return out
	}
	waitUntil(t, "every message answered", crashWait, dsc.Changed, func() bool {
		r := replies()
		for id := range tokens {
			if len(r[id]) == 0 {
				return false
			}
		}
		return true
	})
	second.stop(t)

	r := replies()
	// What a post shows now: a streamed reply is posted at its first words
	// and then edited.
	edited := map[string]string{}
	for _, e := range dsc.MessageEdits() {
		edited[e.MessageID] = e.Message.Content
	}
	final := func(p discordtest.Post) string {
		if c, ok := edited[p.Message.ID]; ok {
			return c
		}
		return p.Body.Content
	}
	for id, token := range tokens {
		ps := r[id]
		switch {
		case len(ps) != 1:
			t.Errorf("%s answered %d times", token, len(ps))
		case ps[0].ChannelID != channel[id]:
			t.Errorf("%s answered in %s", token, ps[0].ChannelID)
		case final(ps[0]) != "Re: "+token && final(ps[0]) != busyText:
			t.Errorf("%s answered %q", token, final(ps[0]))
		}
	}
	if n := len(r[""]); n != 0 {
		t.Errorf("%d posts answer no message", n)
	}
	t.Logf("%d replies, %d of them after the restart (%d finishing a reply the kill interrupted)", len(dsc.Posts()),
		len(dsc.Posts())-postsBefore, strings.Count(second.logs.String(), "finishing a reply interrupted"))
}
