package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/agent/fake"
	"github.com/mnemo-agent/mnemo/bots/discord"
	"github.com/mnemo-agent/mnemo/bots/discord/discordtest"
)

// setHook sets a test hook for the test's duration.
func setHook[T any](t *testing.T, hook *T, f T) {
	t.Helper()
	*hook = f
	t.Cleanup(func() { var zero T; *hook = zero })
}

// Three users write two DMs each to the real adapter; every message gets
// its one reply, which quotes the user's seeded memory (the Discord account
// is linked to it), and the reflector sees every turn.
func TestDiscordSmallRun(t *testing.T) {
	rep := runJSON(t, "-platform", "discord", "-users", "3", "-messages", "2", "-files", "4", "-concurrency", "2")
	if rep.Platform != platformDiscord || rep.Tasks != 6 || rep.FailedTasks != 0 {
		t.Errorf("platform %q, tasks %d (failed %d); want discord, 6 (0)", rep.Platform, rep.Tasks, rep.FailedTasks)
	}
	if rep.MemoryReads != 6 || rep.RepliesQuoting != 6 || rep.ThinkerCalls != 12 {
		t.Errorf("reads %d, quoting replies %d, Thinker calls %d; want 6, 6, 12", rep.MemoryReads, rep.RepliesQuoting, rep.ThinkerCalls)
	}
	if rep.TurnsReflected != 6 || int64(rep.EntriesWritten) != rep.Reflections || rep.Files != 12 {
		t.Errorf("turns reflected %d, entries %d of %d reflections, files %d", rep.TurnsReflected, rep.EntriesWritten, rep.Reflections, rep.Files)
	}
	d := rep.Discord
	if d == nil {
		t.Fatal("no discord figures")
	}
	// READY, the six messages and the six replies echoed back.
	if d.Messages != 6 || d.Replies != 6 || d.PostFailures != 0 || d.Typings != 6 || d.GatewayConns != 1 || d.GatewayEvents != 13 {
		t.Errorf("discord figures %+v", *d)
	}
	if d.FakeHeapLive <= 0 || d.FakeHeapLive > rep.HeapLive {
		t.Errorf("the fake's records hold %d of %d bytes live", d.FakeHeapLive, rep.HeapLive)
	}
	// users/@me, gateway, the /memory overwrite, then a typing and a post per message.
	if d.RESTCalls != 15 || d.RESTConnections < 1 {
		t.Errorf("REST calls %d over %d connections; want 15 over ≥ 1", d.RESTCalls, d.RESTConnections)
	}
	l := rep.LatencyMS
	if !(l.P50 > 0 && l.P50 <= l.P99 && l.P99 <= l.Max) {
		t.Errorf("latency %+v", l)
	}
	if len(rep.Problems) != 0 {
		t.Errorf("problems: %v", rep.Problems)
	}
	if s := rep.CPUBySide; s != nil {
		if _, ok := s[sideFakeDiscord]; !ok {
			t.Errorf("by side %v lacks %s", s, sideFakeDiscord)
		}
	}
}

func TestBothText(t *testing.T) {
	out, errOut, err := runLoad(t, context.Background(), "-platform", "both", "-users", "2", "-messages", "2", "-files", "2")
	if err != nil {
		t.Fatalf("run: %v\n%s", err, errOut)
	}
	wantParts(t, "the report", out,
		"platform       direct: each message a task given to the agent",
		"platform       discord: each message a DM to the Discord adapter",
		"discord        4 messages, 4 replies, 0 reply posts refused, 4 typing indicators",
		"fake model and fake Discord included",
		" of it the fake Discord's records)",
		"Discord path against the direct path, the same load in this process (4 and 4 tasks):",
		"  CPU per message  ", " ms through Discord, ", " ms direct; whole process, fakes included)",
		"  latency          p50 ", "  tasks/s          ",
	)
	if strings.Count(out, "mnemo-load: 2 users × 2 messages") != 2 {
		t.Errorf("want two reports:\n%s", out)
	}
}

func TestBothJSON(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "both")
	out, errOut, err := runLoad(t, context.Background(), "-json", "-platform", "both", "-users", "2", "-messages", "2", "-files", "2", "-dir", dir)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, errOut)
	}
	var c Comparison
	if err := json.Unmarshal([]byte(out), &c); err != nil {
		t.Fatalf("-json output does not parse: %v\n%s", err, out)
	}
	if c.Direct == nil || c.Discord == nil {
		t.Fatalf("comparison lacks a run:\n%s", out)
	}
	if c.Direct.Platform != platformDirect || c.Discord.Platform != platformDiscord || c.Direct.Discord != nil || c.Discord.Discord == nil {
		t.Errorf("platforms %q and %q", c.Direct.Platform, c.Discord.Platform)
	}
	if c.Direct.Dir != filepath.Join(dir, "direct") || c.Discord.Dir != filepath.Join(dir, "discord") || !c.Discord.Kept {
		t.Errorf("dirs %q and %q (kept %v)", c.Direct.Dir, c.Discord.Dir, c.Discord.Kept)
	}
	if c.Direct.Tasks != 4 || c.Discord.Tasks != 4 || math.IsNaN(c.DiscordPathCPUMS) {
		t.Errorf("tasks %d and %d, path CPU %v", c.Direct.Tasks, c.Discord.Tasks, c.DiscordPathCPUMS)
	}
	if (c.FakeDiscordCPUMS == nil) != (c.Discord.CPUBySide == nil) {
		t.Errorf("fake Discord share %v, by side %v", c.FakeDiscordCPUMS, c.Discord.CPUBySide)
	}
}

func TestCompare(t *testing.T) {
	direct := &Report{Tasks: 100, CPUUserSeconds: 0.2, CPUSysSeconds: 0.05, CPUBySide: map[string]float64{sideMnemo: 0.2}}
	disc := &Report{Tasks: 100, CPUUserSeconds: 0.3, CPUSysSeconds: 0.1, CPUBySide: map[string]float64{sideFakeDiscord: 0.05}}
	c := compare(direct, disc)
	if math.Abs(c.DiscordPathCPUMS-1.5) > 1e-9 || c.FakeDiscordCPUMS == nil || math.Abs(*c.FakeDiscordCPUMS-0.5) > 1e-9 ||
		math.Abs(*c.MnemoSideCPUMS-1.0) > 1e-9 {
		t.Errorf("compare: %+v", c)
	}
	disc.CPUBySide = nil
	if c := compare(direct, disc); c.FakeDiscordCPUMS != nil || c.MnemoSideCPUMS != nil {
		t.Errorf("without a profile: %+v", c)
	}
	var b bytes.Buffer
	if err := writeOut(&b, compare(&Report{}, &Report{Discord: &DiscordFigures{}})); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "CPU per message  +0.00 ms") || strings.Contains(b.String(), "of which") {
		t.Errorf("empty comparison:\n%s", b.String())
	}
}

// Every reply post in one DM refused (the bot may not write there) and
// one rate limited in another (discordgo waits and posts again): the run
// goes on, and the messages without a reply fail it. Each refused message
// costs one or two posts (a streamed reply whose first words could not be
// posted is posted whole at the end, unless the reply came whole before
// its first words were shown), so the refusals are counted as a range.
func TestDiscordMissingReplyFailsTheRun(t *testing.T) {
	setHook(t, &testHooks.discordConfig, func(srv *discordtest.Server, _ *discord.Config) {
		srv.FailNextN("POST /api/v9/channels/"+dmChannelID(1)+"/messages", 100, discordtest.HTTPError(http.StatusForbidden, 50013, "Missing Permissions"))
		srv.FailNext("POST /api/v9/channels/"+dmChannelID(2)+"/messages", discordtest.RateLimited(10*time.Millisecond, false))
	})
	out, _, err := runLoad(t, context.Background(), "-platform", "discord", "-users", "3", "-messages", "2", "-files", "2")
	if err == nil {
		t.Fatalf("no error; report:\n%s", out)
	}
	wantParts(t, "the error", err.Error(),
		"check(s) failed",
		"message 1 of load-0002 (",
		"message 2 of load-0002 (",
		") got no reply",
		"4 replies quote facts/user.md, but the Thinker read it 6 times",
	)
	if !regexp.MustCompile(`\b[234] reply post\(s\) refused by Discord`).MatchString(err.Error()) {
		t.Errorf("the refused posts are not counted: %v", err)
	}
	if strings.Contains(err.Error(), "load-0003") || strings.Contains(err.Error(), "load-0001") {
		t.Errorf("the rate-limited post was not posted again: %v", err)
	}
	if !regexp.MustCompile(`6 messages, 4 replies, [234] reply posts refused`).MatchString(out) || !strings.Contains(out, "tasks          6 in") {
		t.Errorf("report:\n%s", out)
	}
	if code := exitCode(err, io.Discard); code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
}

// A second reply to a message (here posted behind the adapter's back) fails
// the run.
func TestDiscordDuplicateReplyFailsTheRun(t *testing.T) {
	setHook(t, &testHooks.discordDriven, func(srv *discordtest.Server) {
		first := srv.Posts()[0]
		body, _ := json.Marshal(discordgo.MessageSend{Content: first.Message.Content, Reference: first.Body.Reference})
		req, _ := http.NewRequest(http.MethodPost, srv.APIURL()+"channels/"+first.ChannelID+"/messages", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bot "+srv.Options().Token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Error(err)
			return
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("duplicate post: %s", resp.Status)
		}
	})
	out, _, err := runLoad(t, context.Background(), "-platform", "discord", "-users", "3", "-messages", "2", "-files", "2")
	if err == nil || !strings.Contains(err.Error(), "1 check(s) failed") || !strings.Contains(err.Error(), " got 2 replies, want one") {
		t.Fatalf("err = %v\n%s", err, out)
	}
	if !strings.Contains(out, "6 messages, 6 replies, 0 reply posts refused") {
		t.Errorf("report:\n%s", out)
	}
}

func TestMatchReplies(t *testing.T) {
	sent := []string{"11", "12", "21", "", "31", "32"} // 3 users × 2 messages; message 2 of user 2 never sent
	post := func(id, ch, ref, text string) discordtest.Post {
		p := discordtest.Post{ChannelID: ch, Message: discordgo.Message{ID: id, ChannelID: ch, Content: text}}
		if ref != "" {
			p.Body.Reference = &discordgo.MessageReference{MessageID: ref}
		}
		return p
	}
	quote := rememberPrefix + "- Name: " + displayName(0) + ". Let's go on."
	posts := []discordtest.Post{
		post("p1", dmChannelID(0), "11", quote),
		post("p2", dmChannelID(0), "12", nothingText),
		post("p3", dmChannelID(0), "12", nothingText),       // a duplicate
		post("p4", dmChannelID(1), "21", mnemo.ApologyText), // a failed task
		post("p5", dmChannelID(0), "31", nothingText),       // in user 1's channel
		post("p6", dmChannelID(2), "", strings.Repeat("long text ", 10)),
		post("p7", dmChannelID(2), "99", nothingText),
		post("p8", dmChannelID(2), "", "hi"),
	}
	replied, failed, quoting, problems := matchReplies(sent, 2, posts)
	if replied != 4 || failed != 1 || quoting != 1 {
		t.Errorf("replied %d, failed %d, quoting %d; want 4, 1, 1", replied, failed, quoting)
	}
	want := []string{
		"the reply to message 1 of load-0003 went to channel " + dmChannelID(0) + ", not its DM channel " + dmChannelID(2),
		`post p6 in channel ` + dmChannelID(2) + ` replies to no message: "long text long text long text long text long text long text …"`,
		"post p7 in channel " + dmChannelID(2) + " replies to 99, not a message of the run",
		`post p8 in channel ` + dmChannelID(2) + ` replies to no message: "hi"`,
		"message 2 of load-0001 (12) got 2 replies, want one",
		"message 2 of load-0003 (32) got no reply",
	}
	if got := strings.Join(problems, "\n"); got != strings.Join(want, "\n") {
		t.Errorf("problems:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
	}

	// Many problems: the first maxReplyProblems, then how many more.
	many := make([]string, 30)
	for i := range many {
		many[i] = "x" + string(rune('a'+i))
	}
	_, _, _, problems = matchReplies(many, 1, nil)
	if len(problems) != maxReplyProblems+1 || problems[maxReplyProblems] != "… and 10 more problems with the replies" {
		t.Errorf("problems: %d, last %q", len(problems), problems[len(problems)-1])
	}
}

// roundTripFunc is an http.RoundTripper made of a function.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestReplyObserver(t *testing.T) {
	r := &discordRun{channels: map[string]int{"600": 0}, replies: []chan bool{make(chan bool, 1)}}
	var status int
	var fail error
	o := &replyObserver{r: r, base: roundTripFunc(func(*http.Request) (*http.Response, error) {
		if fail != nil {
			return nil, fail
		}
		return &http.Response{StatusCode: status, Body: http.NoBody}, nil
	})}
	call := func(method, path string) {
		t.Helper()
		req, _ := http.NewRequest(method, "http://127.0.0.1"+path, nil)
		resp, err := o.RoundTrip(req)
		if (err != nil) != (fail != nil) || (err == nil && resp.StatusCode != status) {
			t.Errorf("%s %s: %v, %v", method, path, resp, err)
		}
	}
	signal := func() (bool, bool) {
		select {
		case ok := <-r.replies[0]:
			return ok, true
		default:
			return false, false
		}
	}
	status = http.StatusOK
	for _, c := range [][2]string{
		{http.MethodGet, "/api/v9/channels/600/messages"},
		{http.MethodPost, "/api/v9/users/@me"},
		{http.MethodPost, "/api/v9/channels/600/typing"},
		{http.MethodPost, "/api/v9/channels/700/messages"},
	} {
		call(c[0], c[1])
		if _, got := signal(); got {
			t.Errorf("%s %s signalled a reply", c[0], c[1])
		}
	}
	call(http.MethodPost, "/api/v9/channels/600/messages")
	if ok, got := signal(); !ok || !got {
		t.Errorf("accepted post: %v, %v", ok, got)
	}
	status = http.StatusTooManyRequests
	call(http.MethodPost, "/api/v9/channels/600/messages")
	if _, got := signal(); got {
		t.Error("a 429 signalled a reply")
	}
	status = http.StatusInternalServerError
	call(http.MethodPost, "/api/v9/channels/600/messages")
	if ok, got := signal(); ok || !got || r.refused.Load() != 1 {
		t.Errorf("refused post: %v, %v, %d refused", ok, got, r.refused.Load())
	}
	fail = errors.New("connection refused")
	call(http.MethodPost, "/api/v9/channels/600/messages")
	call(http.MethodPost, "/api/v9/channels/600/messages") // the channel is full: dropped
	if ok, got := signal(); ok || !got || r.refused.Load() != 3 {
		t.Errorf("failed post: %v, %v, %d refused", ok, got, r.refused.Load())
	}
	if _, got := signal(); got {
		t.Error("more signals than the channel holds")
	}
}

// The adapter cannot start (a wrong token) or cannot be made (a bad
// setting): the run fails with its error.
func TestDiscordAdapterFails(t *testing.T) {
	setHook(t, &testHooks.discordConfig, func(_ *discordtest.Server, c *discord.Config) { c.Token = "wrong" })
	_, _, err := runLoad(t, context.Background(), "-platform", "discord", "-users", "1", "-messages", "1", "-files", "2")
	if err == nil || !strings.Contains(err.Error(), "discord adapter stopped before it was ready: discord: DISCORD_BOT_TOKEN was refused") {
		t.Errorf("wrong token: %v", err)
	}
	setHook(t, &testHooks.discordConfig, func(_ *discordtest.Server, c *discord.Config) { c.ChannelMemory = "bogus" })
	_, _, err = runLoad(t, context.Background(), "-platform", "discord", "-users", "1", "-messages", "1", "-files", "2")
	if err == nil || !strings.Contains(err.Error(), "discord.channelMemory") {
		t.Errorf("bad setting: %v", err)
	}
}

// The adapter stops in the middle of the load (the token was reset): the
// waiting messages give up and the run fails with Run's error.
func TestDiscordAdapterStopsDuringTheLoad(t *testing.T) {
	setHook(t, &testHooks.discordConfig, func(srv *discordtest.Server, c *discord.Config) {
		var once sync.Once
		c.Handler = handlerFunc(func(context.Context, mnemo.Task) (mnemo.Reply, error) {
			once.Do(func() { // the token is reset: the adapter asks REST once the gateway drops
				srv.FailNext("GET /api/v9/users/@me", discordtest.HTTPError(http.StatusUnauthorized, 0, "401: Unauthorized"))
				srv.DropConnections()
			})
			return mnemo.Reply{Text: nothingText}, nil
		})
	})
	_, _, err := runLoad(t, context.Background(), "-platform", "discord", "-users", "2", "-messages", "2", "-files", "2", "-timeout", "1m")
	if err == nil || !strings.Contains(err.Error(), "discord adapter: discord: DISCORD_BOT_TOKEN was refused by Discord (401 Unauthorized)") {
		t.Errorf("err = %v", err)
	}
}

type handlerFunc func(context.Context, mnemo.Task) (mnemo.Reply, error)

func (f handlerFunc) Handle(ctx context.Context, t mnemo.Task) (mnemo.Reply, error) { return f(ctx, t) }

// A timeout while the adapter's tasks wait on a slow model: the run ends
// at once, without waiting for them longer than abandonAfter.
func TestDiscordTimeout(t *testing.T) {
	setHook(t, &testHooks.abandonAfter, 200*time.Millisecond)
	start := time.Now()
	_, _, err := runLoad(t, context.Background(), "-platform", "discord", "-users", "2", "-messages", "2", "-files", "2",
		"-model-latency", "10s", "-timeout", "1s")
	if err == nil || !strings.Contains(err.Error(), "load run stopped: timed out after 1s (-timeout)") {
		t.Fatalf("err = %v, want the timeout", err)
	}
	if d := time.Since(start); d > 8*time.Second {
		t.Errorf("a 1s timeout took %v to end the run", d)
	}
}

func TestFakeHost(t *testing.T) {
	var logs bytes.Buffer
	tb := &fakeHost{log: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	var order []int
	err := tb.start(func(tb fake.T) {
		tb.Helper()
		tb.Cleanup(func() { order = append(order, 1) })
		tb.Cleanup(func() { order = append(order, 2) })
	})
	if err != nil {
		t.Errorf("start: %v", err)
	}
	err = tb.start(func(tb fake.T) {
		tb.Fatalf("listen: %v", "no ports")
		t.Error("Fatalf returned")
	})
	if err == nil || err.Error() != "listen: no ports" {
		t.Errorf("start after Fatalf: %v", err)
	}
	tb.cleanup()
	tb.cleanup() // once only
	if len(order) != 2 || order[0] != 2 || order[1] != 1 {
		t.Errorf("cleanups ran in order %v, want [2 1]", order)
	}
	if !strings.Contains(logs.String(), "listen: no ports") {
		t.Errorf("logs:\n%s", logs.String())
	}
	defer func() {
		if v := recover(); v != "boom" {
			t.Errorf("recovered %v, want the panic to go on", v)
		}
	}()
	_ = tb.start(func(fake.T) { panic("boom") })
}

// mnemo-load is a program, not a test: it starts the fakes through
// fake.T, so package testing (and its flags) must not be linked in.
func TestNoTestingLinked(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 || !slices.Contains(deps, "github.com/mnemo-agent/mnemo/bots/discord/discordtest") {
		t.Fatalf("go list -deps listed too little to trust:\n%s", out)
	}
	for _, p := range deps {
		if p == "testing" || strings.HasPrefix(p, "testing/") {
			t.Errorf("mnemo-load links %s; the fakes must be started through fake.T, not testing.TB", p)
		}
	}
}

// The help names the new flag and a bad platform is a usage error.
func TestPlatformFlag(t *testing.T) {
	out, _, _ := runLoad(t, context.Background(), "-h")
	if !strings.Contains(out, "-platform") || !strings.Contains(out, "-platform both") {
		t.Errorf("help:\n%s", out)
	}
	_, _, err := runLoad(t, context.Background(), "-platform", "slack")
	if err == nil || !strings.Contains(err.Error(), `-platform "slack": want direct, discord or both`) || exitCode(err, io.Discard) != 2 {
		t.Errorf("bad platform: %v", err)
	}
}

// -platform both fails with either run, and names the run a problem is of.
func TestBothFails(t *testing.T) {
	args := []string{"-platform", "both", "-users", "2", "-messages", "1", "-files", "2"}
	setHook(t, &testHooks.seeded, func(memDir string) {
		if err := os.RemoveAll(memDir); err != nil {
			t.Error(err)
		}
		if err := os.WriteFile(memDir, nil, 0o600); err != nil { // the store cannot open
			t.Error(err)
		}
	})
	if out, _, err := runLoad(t, context.Background(), args...); err == nil || out != "" {
		t.Errorf("the direct run fails: err %v, stdout %q", err, out)
	}
	testHooks.seeded = nil

	setHook(t, &testHooks.discordConfig, func(_ *discordtest.Server, c *discord.Config) { c.Token = "wrong" })
	if _, _, err := runLoad(t, context.Background(), args...); err == nil || !strings.Contains(err.Error(), "discord adapter stopped before it was ready") {
		t.Errorf("the Discord run fails: %v", err)
	}

	setHook(t, &testHooks.discordConfig, func(srv *discordtest.Server, _ *discord.Config) {
		srv.FailNext("POST /api/v9/channels/"+dmChannelID(0)+"/messages", discordtest.HTTPError(http.StatusForbidden, 50013, "Missing Permissions"))
	})
	out, _, err := runLoad(t, context.Background(), args...)
	if err == nil || !strings.Contains(err.Error(), "\n  discord: 1 reply post(s) refused by Discord") || strings.Contains(err.Error(), "direct: ") {
		t.Errorf("a problem of the Discord run: %v", err)
	}
	if !strings.Contains(out, "Discord path against the direct path") {
		t.Errorf("no comparison printed:\n%s", out)
	}
}
