package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/bwmarrin/discordgo"

	"github.com/mnemo-agent/mnemo/agent/openaitest"
	"github.com/mnemo-agent/mnemo/bots/discord/discordtest"
	"github.com/mnemo-agent/mnemo/bots/slack/slacktest"
)

// budgetServe runs `mnemo serve` (run's own path, with the budgets on
// clock) against a fake Slack and the fake model, which answers every
// request "ok" at a cost of 100 tokens; limits is the "limits:" section.
type budgetServe struct {
	w    *chatWorld
	slk  *slacktest.Server
	addr string
	logs *syncWriter
	done chan int
	stop context.CancelFunc
	next int // the next message's ts
}

func startBudgetServe(t *testing.T, limits string, clock *testClock) *budgetServe {
	t.Helper()
	return startServeWith(t, "reflector:\n  idle: 1h\nlimits:\n"+limits, clock)
}

// startServeWith is startBudgetServe with the whole mnemo.yaml.
func startServeWith(t *testing.T, cfg string, clock *testClock) *budgetServe {
	t.Helper()
	// Replies come whole (one post each), so a post read is the reply;
	// streaming has its own tests.
	return startServeStreaming(t, false, cfg, clock)
}

// startServeStreaming is startServeWith with llm.stream as given.
func startServeStreaming(t *testing.T, stream bool, cfg string, clock *testClock) *budgetServe {
	t.Helper()
	w := newChatWorld(t)
	cfg = fmt.Sprintf("llm:\n  stream: %v\n", stream) + cfg
	if err := os.WriteFile(filepath.Join(w.dir, "mnemo.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	w.srv.Handle(func(r openaitest.Request) (openaitest.Reply, bool) {
		return openaitest.Text("ok").WithUsage(90, 10), true
	})
	s := &budgetServe{w: w, slk: w.fakeSlack(t, "xoxb-test", "xapp-test"), logs: &syncWriter{}, done: make(chan int, 1), next: 1}
	ln := listenLocal(t)
	s.addr = ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	s.stop = cancel
	go func() {
		err := runWith(stopOn(ctx), []string{"serve", "--listen", s.addr}, cliEnv{getenv: func(k string) string { return w.env[k] },
			stdin: strings.NewReader(""), stdout: io.Discard, stderr: s.logs, now: clock.now})
		s.done <- exitCode(err, s.logs)
	}()
	t.Cleanup(func() {
		cancel()
		if code := <-s.done; code != 0 {
			t.Errorf("serve exit %d:\n%s", code, s.logs.String())
		}
	})
	if err := s.slk.WaitConnected(1, 10*time.Second); err != nil {
		t.Fatalf("no Socket Mode connection: %v\n%s", err, s.logs.String())
	}
	s.logs.waitLogged(t, 10*time.Second, "slack: connected to Socket Mode")
	return s
}

// dm sends a DM from user (U0ADA, U0BOB, …), each in its own conversation.
func (s *budgetServe) dm(user, text string) {
	s.slk.Message(slacktest.MessageEvent{Channel: "D" + user, ChannelType: "im", User: user, Text: text, TS: fmt.Sprintf("1700000000.%06d", s.next)})
	s.next++
}

// posts waits for n posts in all and returns their texts.
func (s *budgetServe) posts(t *testing.T, n int) []string {
	t.Helper()
	posts, err := s.slk.WaitReplies(n, 10*time.Second) // as they show, after a stream's edits
	if err != nil {
		t.Fatalf("%v\n%s", err, s.logs.String())
	}
	var out []string
	for _, p := range posts {
		out = append(out, p.Channel+": "+p.Text)
	}
	return out
}

// thinkerRequests is how many times the model was asked to answer.
func (s *budgetServe) thinkerRequests() int { return len(s.w.srv.Requests()) }

func (s *budgetServe) metric(t *testing.T, want string) {
	t.Helper()
	if _, body := get(t, "http://"+s.addr+"/metrics"); !strings.Contains(body, "\n"+want+"\n") {
		t.Errorf("/metrics lacks %q", want)
	}
}

func count(list []string, sub string) int {
	n := 0
	for _, s := range list {
		if strings.Contains(s, sub) {
			n++
		}
	}
	return n
}

// limits.messagesPerMinute: the 4th message in a minute gets the rate
// reply, is not journaled and reaches no model; the 5th is refused without
// a word; a minute later messages are read again.
func TestServeRateLimit(t *testing.T) {
	clock := &testClock{t: time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)}
	s := startBudgetServe(t, "  messagesPerMinute: 3\n  tokensPerDay: 0\n", clock)
	for i := range 4 {
		s.dm("U0ADA", fmt.Sprint("message ", i))
	}
	posts := s.posts(t, 4)
	if count(posts, "ok") != 3 || count(posts, "faster than I can take them") != 1 {
		t.Fatalf("posts %q", posts)
	}
	s.dm("U0ADA", "message 4") // refused, not told again
	s.logs.waitFor(t, "message refused: over limits.messagesPerMinute", 2)
	s.dm("U0BOB", "bob is not limited by ada")
	s.posts(t, 5)
	if n := s.thinkerRequests(); n != 4 {
		t.Errorf("%d model requests; want 4 (3 of ada, 1 of bob)", n)
	}
	s.metric(t, `mnemo_refused_total{platform="slack",reason="rate"} 2`)
	journal, _ := os.ReadFile(filepath.Join(s.w.dir, "data", "state", "intake", "slack.jsonl"))
	if strings.Contains(string(journal), "message 3") || strings.Contains(string(journal), "message 4") {
		t.Errorf("a refused message was journaled:\n%s", journal)
	}
	clock.add(time.Minute)
	s.dm("U0ADA", "a minute later")
	if posts := s.posts(t, 6); !strings.HasSuffix(posts[5], "ok") {
		t.Errorf("a minute later: %q", posts)
	}
}

// limits.tokensPerDay and limits.totalTokensPerDay: a person over their
// day's tokens gets the budget reply and no model call, others go on; the
// total refuses everyone; at 00:00 UTC both open again.
func TestServeTokenBudgets(t *testing.T) {
	tests := []struct {
		name, limits string
		// the people who write, in order, and "day" for the next UTC day;
		// want is each one's answer: "ok", "mine", "all".
		steps []string
		want  []string
		count string
	}{
		{"per person", "  tokensPerDay: 150\n", // 100 tokens an answer: the 2nd passes, the 3rd is refused
			[]string{"U0ADA", "U0ADA", "U0ADA", "U0BOB", "U0ADA", "day", "U0ADA"},
			[]string{"ok", "ok", "mine", "ok", "", "", "ok"}, `mnemo_refused_total{platform="slack",reason="tokens"} 2`},
		{"total", "  tokensPerDay: 0\n  totalTokensPerDay: 150\n",
			[]string{"U0ADA", "U0BOB", "U0CAROL", "U0ADA", "day", "U0CAROL"},
			[]string{"ok", "ok", "all", "all", "", "ok"}, `mnemo_refused_total{platform="slack",reason="total_tokens"} 2`},
	}
	texts := map[string]string{"ok": "ok", "mine": "used up today's share", "all": "for everyone"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := &testClock{t: time.Date(2026, 11, 27, 23, 0, 0, 0, time.UTC)}
			s := startBudgetServe(t, "  messagesPerMinute: 0\n"+tt.limits, clock)
			posted, asked, refused := 0, 0, 0
			for i, who := range tt.steps {
				if who == "day" {
					clock.add(time.Hour) // 00:00 UTC
					continue
				}
				s.dm(who, fmt.Sprint("message ", i))
				if tt.want[i] != "ok" {
					refused++
				}
				if tt.want[i] == "" { // refused again within the minute: no reply
					s.logs.waitFor(t, "message refused: over limits.", refused)
					continue
				}
				posted++
				// A streamed reply shows before its task ends and is charged:
				// wait for the task.
				s.logs.waitFor(t, "slack: replied", posted)
				if tt.want[i] == "ok" {
					asked++
				}
				got := s.posts(t, posted)[posted-1]
				if !strings.HasPrefix(got, "D"+who+": ") || !strings.Contains(got, texts[tt.want[i]]) {
					t.Fatalf("step %d (%s): post %q, want %q", i, who, got, tt.want[i])
				}
				if n := s.thinkerRequests(); n != asked {
					t.Fatalf("step %d: %d model requests, want %d", i, n, asked)
				}
			}
			s.metric(t, tt.count)
		})
	}
}

// An incoming message past the platform's limit is cut before it is
// journaled: a 50,000-character Slack DM is kept and sent to the model as
// its first 40,000 characters, and the person is told.
func TestServeSlackLongMessageCut(t *testing.T) {
	clock := &testClock{t: time.Now()}
	s := startBudgetServe(t, "  messagesPerMinute: 20\n", clock)
	release := make(chan struct{})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	t.Cleanup(free) // before serve stops
	s.w.srv.Handle(func(r openaitest.Request) (openaitest.Reply, bool) {
		<-release // the journal is read while the message waits for its answer
		return openaitest.Text("ok"), true
	})
	const end = "the end of the message"
	long := strings.Repeat("é", 49_000) + strings.Repeat(end, 1000/len(end)+1) // 50,000+ characters; the end is cut
	s.dm("U0ADA", long)
	s.posts(t, 1) // the note comes before the answer
	journal, err := os.ReadFile(filepath.Join(s.w.dir, "data", "state", "intake", "slack.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, line := range strings.Split(string(journal), "\n") {
		var rec struct {
			Data json.RawMessage `json:"data"`
		}
		if json.Unmarshal([]byte(line), &rec) != nil || rec.Data == nil {
			continue
		}
		var w struct{ Text string }
		if err := json.Unmarshal(rec.Data, &w); err != nil || w.Text == "" {
			continue
		}
		found = true
		if n := utf8.RuneCountInString(w.Text); n != 40_000 || strings.Contains(w.Text, end) {
			t.Errorf("journaled text: %d characters", n)
		}
	}
	if !found || strings.Contains(string(journal), end) {
		t.Fatalf("the message is not in the journal as cut (%d bytes):\n%.300s", len(journal), journal)
	}
	free()
	posts := s.posts(t, 2)
	if count(posts, "I read only its first 40,000 characters") != 1 || count(posts, ": ok") != 1 {
		t.Errorf("posts %q", posts)
	}
	reqs := s.w.srv.Requests()
	if n := utf8.RuneCountInString(reqs[0].LastUser()); n != 40_000 {
		t.Errorf("the model saw %d characters", n)
	}
	s.metric(t, `mnemo_refused_total{platform="slack",reason="too_long"} 1`)
}

// Discord cuts at its own 4,000 characters, and its messages count against
// the same budgets: with one message a minute, the second is refused.
func TestServeDiscordLongMessageCutAndRate(t *testing.T) {
	w := newChatWorld(t)
	if err := os.WriteFile(filepath.Join(w.dir, "mnemo.yaml"), []byte("limits:\n  messagesPerMinute: 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	w.srv.Handle(func(openaitest.Request) (openaitest.Reply, bool) { return openaitest.Text("ok"), true })
	dsc := w.fakeDiscord(t, discordtest.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	logs := &syncWriter{}
	done := make(chan int, 1)
	go func() {
		err := run(stopOn(ctx), []string{"serve", "--listen", "127.0.0.1:0"}, func(k string) string { return w.env[k] }, strings.NewReader(""), io.Discard, logs)
		done <- exitCode(err, logs)
	}()
	defer func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("serve exit %d:\n%s", code, logs.String())
		}
	}()
	if err := dsc.WaitReady(1, 10*time.Second); err != nil {
		t.Fatalf("no Discord session: %v\n%s", err, logs.String())
	}
	ada := &discordgo.User{ID: "80351110224678912", Username: "ada"}
	dsc.MessageCreate(discordgo.Message{ChannelID: "300000000000000004", Author: ada, Content: strings.Repeat("x", 5000)})
	if _, err := dsc.WaitPosts(2, 10*time.Second); err != nil {
		t.Fatalf("%v\n%s", err, logs.String())
	}
	dsc.MessageCreate(discordgo.Message{ChannelID: "300000000000000004", Author: ada, Content: "again"})
	posts, err := dsc.WaitPosts(3, 10*time.Second)
	if err != nil {
		t.Fatalf("%v\n%s", err, logs.String())
	}
	var texts []string
	for _, p := range posts {
		texts = append(texts, p.Body.Content)
	}
	if count(texts, "I read only its first 4,000 characters") != 1 || count(texts, "faster than I can take them") != 1 {
		t.Errorf("posts %q", texts)
	}
	reqs := w.srv.Requests()
	if len(reqs) != 1 || utf8.RuneCountInString(reqs[0].LastUser()) != 4000 {
		t.Errorf("%d model requests; the first saw %d characters", len(reqs), utf8.RuneCountInString(reqs[0].LastUser()))
	}
}

// The reflector's tokens count toward limits.totalTokensPerDay: after
// one answer (100 tokens) and its reflection (100), a total of 150 is
// spent and the next person is refused.
func TestServeReflectorCountsTowardTotal(t *testing.T) {
	clock := &testClock{t: time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)}
	s := startServeWith(t, "reflector:\n  idle: 1ms\nlimits:\n  tokensPerDay: 0\n  totalTokensPerDay: 150\n", clock)
	s.dm("U0ADA", "hello")
	s.posts(t, 1)
	s.logs.waitFor(t, "reflection: done", 1)
	s.dm("U0BOB", "hello")
	if got := s.posts(t, 2)[1]; !strings.Contains(got, "for everyone") {
		t.Fatalf("after the reflection: %q", got)
	}
	if n := s.thinkerRequests(); n != 2 {
		t.Errorf("%d model requests; want the answer and the reflection", n)
	}
}

// A server that reports no usage (streamed or not) does not open the
// budgets: mnemo counts what it sent and received itself, says once that
// the server gives none, and with limits.tokensPerDay: 20 answers the
// first of five messages and tells the second it is over; the rest are
// refused without a word.
func TestServeBudgetWithoutUsage(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprint("stream=", stream), func(t *testing.T) {
			clock := &testClock{t: time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)}
			s := startServeStreaming(t, stream, "reflector:\n  idle: 1h\nlimits:\n  messagesPerMinute: 0\n  tokensPerDay: 20\n", clock)
			s.w.srv.Handle(func(openaitest.Request) (openaitest.Reply, bool) {
				return openaitest.Text("ok").WithoutUsage(), true
			})
			for i := range 5 {
				s.dm("U0ADA", fmt.Sprint("message ", i))
			}
			s.logs.waitFor(t, "message refused: over limits.tokensPerDay", 4)
			posts := s.posts(t, 2)
			if count(posts, ": ok") != 1 || count(posts, "used up today's share") != 1 || len(posts) != 2 {
				t.Fatalf("posts %q", posts)
			}
			if n := s.thinkerRequests(); n != 1 {
				t.Errorf("%d model requests, want 1", n)
			}
			if n := strings.Count(s.logs.String(), "reports no token usage"); n != 1 {
				t.Errorf("said %d times that the server reports no usage:\n%s", n, s.logs.String())
			}
			s.metric(t, `mnemo_refused_total{platform="slack",reason="tokens"} 4`)
		})
	}
}

// A burst: eight messages of one person in eight conversations arrive
// while the first answer is being written. Tokens are held before the
// model is asked, so the seven others are refused at once, not answered
// because nothing was charged yet.
func TestServeBudgetBurst(t *testing.T) {
	clock := &testClock{t: time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)}
	s := startBudgetServe(t, "  messagesPerMinute: 0\n  tokensPerDay: 20\n", clock)
	release := make(chan struct{})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	t.Cleanup(free) // before serve stops
	s.w.srv.Handle(func(openaitest.Request) (openaitest.Reply, bool) {
		<-release
		return openaitest.Text("ok").WithUsage(90, 10), true
	})
	for i := range 8 {
		s.slk.Message(slacktest.MessageEvent{Channel: fmt.Sprint("D0ADA", i), ChannelType: "im", User: "U0ADA",
			Text: "hello", TS: fmt.Sprintf("1700000000.%06d", s.next)})
		s.next++
	}
	s.logs.waitFor(t, "message refused: over limits.tokensPerDay", 7)
	free()
	posts := s.posts(t, 2)
	if count(posts, ": ok") != 1 || count(posts, "used up today's share") != 1 || len(posts) != 2 {
		t.Fatalf("posts %q", posts)
	}
	if n := s.thinkerRequests(); n != 1 {
		t.Errorf("%d model requests, want 1", n)
	}
}

// A person's reflections are charged to them: after one answer (100
// tokens) and its reflection (100), ada is over limits.tokensPerDay: 150
// and bob is not.
func TestServeReflectionChargedToThePerson(t *testing.T) {
	clock := &testClock{t: time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)}
	s := startServeWith(t, "reflector:\n  idle: 1ms\nlimits:\n  messagesPerMinute: 0\n  tokensPerDay: 150\n", clock)
	s.dm("U0ADA", "hello")
	s.posts(t, 1)
	s.logs.waitFor(t, "reflection: done", 1)
	s.dm("U0ADA", "again")
	if got := s.posts(t, 2)[1]; !strings.Contains(got, "used up today's share") {
		t.Fatalf("after the reflection: %q", got)
	}
	s.dm("U0BOB", "hello")
	if got := s.posts(t, 3)[2]; !strings.HasSuffix(got, ": ok") {
		t.Fatalf("bob: %q", got)
	}
}
