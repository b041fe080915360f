package slack

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
	"unicode/utf8"

	"github.com/slack-go/slack/socketmode"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/bots/access"
	"github.com/mnemo-agent/mnemo/bots/internal/bottest"
	"github.com/mnemo-agent/mnemo/bots/slack/slacktest"
)

// get is a copy of the thread under key.
func (a *assistantThreads) get(key string) (assistantThread, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	th, ok := a.m[key]
	if !ok {
		return assistantThread{}, false
	}
	return *th, true
}

// topicsMemory is a /memory backend with Topics, recording whose topics
// were asked.
type topicsMemory struct {
	*bottest.Memory
	recent, facts []string
	err           error

	mu    sync.Mutex
	asked []string
}

func (m *topicsMemory) Topics(user string, n int) ([]string, []string, error) {
	m.mu.Lock()
	m.asked = append(m.asked, user)
	m.mu.Unlock()
	return m.recent[:min(n, len(m.recent))], m.facts[:min(n, len(m.facts))], m.err
}

func (m *topicsMemory) askedFor() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.asked)
}

// withTopics starts a bot whose memory has these topics.
func withTopics(t *testing.T, tm *topicsMemory, more ...func(*Config)) *harness {
	return start(t, setup{config: func(c *Config) {
		tm.Memory = c.Memory.(*bottest.Memory)
		c.Memory = tm
		for _, f := range more {
			f(c)
		}
	}})
}

func waitPrompts(t *testing.T, srv *slacktest.Server, n int) []slacktest.SuggestedPrompts {
	t.Helper()
	waitFor(t, "suggested prompts", func() bool { return len(srv.SuggestedPromptsSet()) >= n })
	return srv.SuggestedPromptsSet()
}

const me = "slack-T0TEAM-" + slacktest.DefaultUserID

// A thread opened in the split view is greeted, in the thread, and given
// four prompts drawn from the person's own memory: their newest episodes
// and fact topics, then "me". A redelivered start changes nothing.
func TestAssistantWelcomeFromMemory(t *testing.T) {
	tm := &topicsMemory{recent: []string{"Logger fix", "Config\u200b refactor"}, facts: []string{"Project Atlas", "Pets"}}
	hs := withTopics(t, tm)
	env := hs.srv.AssistantThread(slacktest.AssistantThreadEvent{ContextChannel: "C0VIEW"})
	got := waitPrompts(t, hs.srv, 1)[0]
	if got.ChannelID != slacktest.DefaultDMChannel || got.ThreadTS != env.TS || got.Title != "Pick up where we left off" {
		t.Errorf("prompts set at %s/%s titled %q", got.ChannelID, got.ThreadTS, got.Title)
	}
	want := []slacktest.Prompt{
		{Title: "What did we decide about Logger fix?", Message: "What did we decide about Logger fix? Remind me briefly, and what is still open."},
		{Title: "What did we decide about Config refactor?", Message: "What did we decide about Config refactor? Remind me briefly, and what is still open."},
		{Title: "What do you remember about Project Atlas?", Message: "What do you remember about Project Atlas?"},
		{Title: "What do you remember about Pets?", Message: "What do you remember about Pets?"},
	}
	if !slices.Equal(got.Prompts, want) {
		t.Errorf("prompts:\n%+v\nwant\n%+v", got.Prompts, want)
	}
	posts := hs.posts(t, 1)
	if p := posts[0]; p.Channel != slacktest.DefaultDMChannel || p.ThreadTS != env.TS || !strings.HasPrefix(p.Text, "Welcome back.") {
		t.Errorf("greeting: %+v", p)
	}
	if p := posts[0]; p.Seq > got.Seq {
		t.Error("the prompts came before the greeting")
	}
	if asked := tm.askedFor(); !slices.Equal(asked, []string{me}) {
		t.Errorf("topics asked of %q, want the person's own memory only", asked)
	}
	// Slack delivers the start again (a retry, a reconnect).
	hs.srv.AssistantThread(slacktest.AssistantThreadEvent{ThreadTS: env.TS, ContextChannel: "C0VIEW"})
	hs.quiet(t, 1)
	if n := len(hs.srv.SuggestedPromptsSet()); n != 1 {
		t.Errorf("%d prompt lists after a redelivered start, want 1", n)
	}
}

// A person mnemo knows nothing of (or whose memory cannot be read, or
// with a memory that has no topics) gets the generic prompts and the
// first greeting.
func TestAssistantGenericPrompts(t *testing.T) {
	for _, c := range []struct {
		name string
		mem  *topicsMemory // nil: a memory without Topics
		log  string
	}{
		{"no topics", &topicsMemory{}, ""},
		{"memory without topics", nil, ""},
		{"unreadable memory", &topicsMemory{recent: []string{"x"}, err: errors.New("disk on fire")}, "cannot read the person's memory for suggested prompts"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var hs *harness
			if c.mem == nil {
				hs = start(t, setup{})
			} else {
				hs = withTopics(t, c.mem)
			}
			hs.srv.AssistantThread(slacktest.AssistantThreadEvent{})
			got := waitPrompts(t, hs.srv, 1)[0]
			if got.Title != "Try one of these" || len(got.Prompts) != maxPrompts || got.Prompts[0].Title != "What can you do?" {
				t.Errorf("prompts: %+v", got)
			}
			if p := hs.posts(t, 1)[0]; !strings.HasPrefix(p.Text, "Hi, I'm mnemo.") {
				t.Errorf("greeting %q", p.Text)
			}
			if c.log != "" && !strings.Contains(hs.logs.String(), c.log) {
				t.Errorf("logs lack %q:\n%s", c.log, hs.logs)
			}
		})
	}
}

// The thread's title is set once its first message is answered, from
// that message, after the reply; later messages, and DM threads that are
// not assistant threads, leave titles alone.
func TestAssistantTitleAfterFirstReply(t *testing.T) {
	hs := start(t, setup{})
	env := hs.srv.AssistantThread(slacktest.AssistantThreadEvent{ContextChannel: "C0VIEW"})
	waitPrompts(t, hs.srv, 1)
	hs.srv.Message(slacktest.MessageEvent{ThreadTS: env.TS, Text: "\n  **Plan the Q3 offsite** for the whole team, with a budget and dates\nand more"})
	waitFor(t, "a title", func() bool { return len(hs.srv.Titles()) > 0 })
	title := hs.srv.Titles()[0]
	if title.ThreadTS != env.TS || title.ChannelID != slacktest.DefaultDMChannel || title.Title != "Plan the Q3 offsite for the whole team, with a budget and…" {
		t.Errorf("title %+v", title)
	}
	posts := hs.posts(t, 2)
	if posts[1].Seq > title.Seq {
		t.Error("the title was set before the reply was posted")
	}
	hs.srv.Message(slacktest.MessageEvent{ThreadTS: env.TS, Text: "second question"})
	other := hs.srv.AddMessage(slacktest.DefaultDMChannel, slacktest.Message{User: slacktest.DefaultUserID, Text: "a plain DM"})
	hs.srv.Message(slacktest.MessageEvent{ThreadTS: other.TS, Text: "a reply in a plain DM thread"})
	hs.quiet(t, 4)
	if n := len(hs.srv.Titles()); n != 1 {
		t.Errorf("%d titles, want 1: %+v", n, hs.srv.Titles())
	}
}

// The thread's "is thinking…" status is set again while a long reply is
// worked on (Slack clears it after two minutes), and never after it is
// cleared.
func TestAssistantStatusKeptAlive(t *testing.T) {
	hs := start(t, setup{bot: func(b *Bot) { b.statusEvery = 5 * time.Millisecond }})
	env := hs.srv.AssistantThread(slacktest.AssistantThreadEvent{})
	waitPrompts(t, hs.srv, 1)
	release := hs.h.Hold()
	defer release()
	hs.srv.Message(slacktest.MessageEvent{ThreadTS: env.TS, Text: "a long question"})
	waitFor(t, "the status set three times", func() bool { return len(hs.srv.Statuses()) >= 3 })
	release()
	hs.quiet(t, 2)
	st := hs.srv.Statuses()
	for i, s := range st {
		last := i == len(st)-1
		if s.ThreadTS != env.TS || last != (s.Status == "") || !last && s.Status != thinkingStatus {
			t.Errorf("status %d of %d: %+v", i, len(st), s)
		}
	}
}

// The refresh, on a fake clock: every statusRefresh while shown, with the
// text last shown; none after stop; it ends with its context too.
func TestStatusKeeper(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		var mu sync.Mutex
		type set struct {
			at     time.Duration
			status string
		}
		var sets []set
		rec := func(_ context.Context, s string) error {
			mu.Lock()
			defer mu.Unlock()
			sets = append(sets, set{time.Since(start), s})
			return errors.New("refused") // a failed refresh is tried again
		}
		k := keepStatus(t.Context(), statusRefresh, thinkingStatus, rec)
		time.Sleep(100 * time.Second)
		if err := k.update(t.Context(), "is reading facts/user.md…"); err == nil {
			t.Error("update hid the error of its call")
		}
		time.Sleep(5*time.Minute - 100*time.Second)
		synctest.Wait()
		k.stop()
		k.stop() // twice is fine
		time.Sleep(10 * time.Minute)
		mu.Lock()
		want := []set{{90 * time.Second, thinkingStatus}, {100 * time.Second, "is reading facts/user.md…"},
			{180 * time.Second, "is reading facts/user.md…"}, {270 * time.Second, "is reading facts/user.md…"}}
		if !slices.Equal(sets, want) {
			t.Errorf("sets %+v\nwant %+v", sets, want)
		}
		mu.Unlock()

		ctx, cancel := context.WithCancel(t.Context())
		k = keepStatus(ctx, statusRefresh, thinkingStatus, func(context.Context, string) error { return nil })
		cancel()
		synctest.Wait()
		select {
		case <-k.ended:
		default:
			t.Error("the refresh outlived its context")
		}
	})
}

// An assistant thread is a private conversation: its messages are
// answered as a DM (the person's private memory in scope, no channel
// memory, no channel read), whatever channel the person is viewing. The
// viewed channel is context only: it reaches neither the task nor any
// Web API call.
func TestAssistantPrivateScope(t *testing.T) {
	tm := &topicsMemory{recent: []string{"Logger fix"}}
	hs := withTopics(t, tm, func(c *Config) { c.ChannelMemory = "full" })
	env := hs.srv.AssistantThread(slacktest.AssistantThreadEvent{ContextChannel: "C0VIEW"})
	waitPrompts(t, hs.srv, 1)
	hs.srv.AssistantThread(slacktest.AssistantThreadEvent{Type: slacktest.AssistantThreadContextChanged, ThreadTS: env.TS, ContextChannel: "G0SECRET"})
	hs.srv.Message(slacktest.MessageEvent{ThreadTS: env.TS, Text: "what did we decide?"})
	task := hs.h.WaitTasks(t, 1, wait)[0]
	if task.Channel || task.ChannelKey != "" || task.User != me || task.Origin.Place != "dm" || len(task.Context) != 0 {
		t.Errorf("task: channel %v, channel memory %q, user %q, place %q, context %v", task.Channel, task.ChannelKey, task.User, task.Origin.Place, task.Context)
	}
	hs.quiet(t, 2)
	for _, c := range hs.srv.Calls("") {
		for k, vs := range c.Params {
			for _, v := range vs {
				if strings.Contains(v, "C0VIEW") || strings.Contains(v, "G0SECRET") {
					t.Errorf("%s sent the viewed channel in %s=%q", c.Method, k, v)
				}
			}
		}
	}
	if asked := tm.askedFor(); !slices.Equal(asked, []string{me}) {
		t.Errorf("topics asked of %q", asked)
	}
	if shown := hs.mem.ShownChannels(); len(shown) != 0 {
		t.Errorf("channel memory shown: %q", shown)
	}
}

// context_changed replaces the channel kept as the thread's context; for
// a thread not seen start (before a restart) it is kept too, and that
// thread's title, which may exist, is left alone. Malformed events are
// acknowledged and ignored.
func TestAssistantContextChanged(t *testing.T) {
	hs := start(t, setup{})
	env := hs.srv.AssistantThread(slacktest.AssistantThreadEvent{ContextChannel: "C0ONE"})
	waitPrompts(t, hs.srv, 1)
	key := threadKey(slacktest.DefaultDMChannel, env.TS)
	hs.srv.AssistantThread(slacktest.AssistantThreadEvent{Type: slacktest.AssistantThreadContextChanged, ThreadTS: env.TS, ContextChannel: "C0TWO"})
	hs.quiet(t, 1)
	if th, ok := hs.bot.assist.get(key); !ok || th.viewing != "C0TWO" || th.titled || th.author != slacktest.DefaultUserID {
		t.Errorf("kept %+v, %v", th, ok)
	}
	// Back to no channel (e.g. the person opened a DM).
	hs.srv.AssistantThread(slacktest.AssistantThreadEvent{Type: slacktest.AssistantThreadContextChanged, ThreadTS: env.TS})
	hs.quiet(t, 1)
	if th, _ := hs.bot.assist.get(key); th.viewing != "" {
		t.Errorf("viewing %q after a context without a channel", th.viewing)
	}
	old := hs.srv.AddMessage(slacktest.DefaultDMChannel, slacktest.Message{User: slacktest.DefaultUserID, SubType: "assistant_app_thread", Text: "New chat"})
	hs.srv.AssistantThread(slacktest.AssistantThreadEvent{Type: slacktest.AssistantThreadContextChanged, ThreadTS: old.TS, ContextChannel: "C0ONE"})
	hs.srv.Message(slacktest.MessageEvent{ThreadTS: old.TS, Text: "hello again"})
	for _, bad := range []slacktest.AssistantThreadEvent{
		{Channel: "C0NOTDM"}, {User: "U0/../x"}, {ContextChannel: "C0 X"}, {ThreadTS: "yesterday"},
	} {
		hs.srv.AssistantThread(bad)
	}
	hs.quiet(t, 2)
	if th, ok := hs.bot.assist.get(threadKey(slacktest.DefaultDMChannel, old.TS)); !ok || !th.titled || th.viewing != "C0ONE" {
		t.Errorf("thread seen by its context change: %+v, %v", th, ok)
	}
	if n, p := len(hs.srv.Titles()), len(hs.srv.SuggestedPromptsSet()); n != 0 || p != 1 {
		t.Errorf("%d titles, %d prompt lists", n, p)
	}
}

// Someone not let in gets the refusal in the thread, no prompts, and
// nothing of memory is read.
func TestAssistantRefused(t *testing.T) {
	tm := &topicsMemory{recent: []string{"x"}}
	hs := withTopics(t, tm, func(c *Config) {
		c.Access = access.NewGate(access.GateOptions{Platform: access.Slack, Log: c.Logger,
			Policy: access.Policy{Mode: access.Allowlist, HomeOnly: true, Allow: []access.Entry{{Kind: access.User, ID: "U0OTHER"}}}})
	})
	env := hs.srv.AssistantThread(slacktest.AssistantThreadEvent{})
	p := hs.posts(t, 1)[0]
	if p.ThreadTS != env.TS || !strings.Contains(p.Text, "mnemo access allow slack:T0TEAM/"+slacktest.DefaultUserID) {
		t.Errorf("refusal %+v", p)
	}
	hs.quiet(t, 1)
	if len(hs.srv.SuggestedPromptsSet()) != 0 || len(tm.askedFor()) != 0 {
		t.Error("a refused person got prompts, or their memory was read")
	}
}

// An app without the scope (or without assistant_view) says so once and
// still answers in its threads.
func TestAssistantMethodsRefused(t *testing.T) {
	hs := start(t, setup{prepare: func(srv *slacktest.Server) {
		srv.FailNextN("assistant.threads.setSuggestedPrompts", 2, slacktest.APIError("missing_scope"))
		srv.FailNextN("assistant.threads.setTitle", 2, slacktest.APIError("missing_scope"))
		srv.FailNext("chat.postMessage", slacktest.APIError("channel_not_found")) // the first greeting
	}})
	for i := range 2 {
		env := hs.srv.AssistantThread(slacktest.AssistantThreadEvent{})
		if _, err := hs.srv.WaitCalls("assistant.threads.setSuggestedPrompts", i+1, wait); err != nil {
			t.Fatal(err) // the welcome is done before the message comes
		}
		hs.srv.Message(slacktest.MessageEvent{ThreadTS: env.TS, Text: "hi"})
	}
	hs.quiet(t, 3)
	logs := hs.logs.String()
	for _, want := range []string{"cannot set suggested prompts (is the assistant:write scope granted", "cannot set assistant thread titles",
		"cannot post in the assistant thread"} {
		if n := strings.Count(logs, want); n != 1 {
			t.Errorf("%q logged %d times, want once", want, n)
		}
	}
}

func TestThreadTitle(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"Plan the offsite", "Plan the offsite"},
		{"\n\n   \n> *Quote*  me\nsecond", "Quote me"},
		{"`code_name` ~~old~~", "code_name old"},
		{"a\u202eb\tc", "ab c"},
		{"   ", ""},
		{"", ""},
		{strings.Repeat("x", 100), strings.Repeat("x", maxThreadTitleRunes-1) + "…"},
		{strings.Repeat("word ", 20), strings.TrimSpace(strings.Repeat("word ", 11)) + "…"},
	} {
		if got := threadTitle(c.in); got != c.want {
			t.Errorf("threadTitle(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// FuzzThreadTitle: a title is one line of at most maxThreadTitleRunes
// valid characters, and there is one whenever the text has a letter.
func FuzzThreadTitle(f *testing.F) {
	for _, s := range []string{"Plan the offsite", "\n> *x*", strings.Repeat("é ", 80), "\xff\xfe", "a\u200bb"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := threadTitle(s)
		if !utf8.ValidString(got) || utf8.RuneCountInString(got) > maxThreadTitleRunes || strings.ContainsAny(got, "\n\r\t") {
			t.Errorf("threadTitle(%q) = %q", s, got)
		}
		if p := cut(s, 10); utf8.RuneCountInString(p) > 10 && utf8.ValidString(s) {
			t.Errorf("cut(%q, 10) = %q", s, p)
		}
	})
}

// At most maxAssistantThreads are kept: the oldest goes first.
func TestAssistantThreadsBound(t *testing.T) {
	var a assistantThreads
	for i := range maxAssistantThreads + 1 {
		if !a.put(threadKey("D0DM", strconv.Itoa(i)), assistantThread{author: "U0USER"}) {
			t.Fatalf("thread %d was not new", i)
		}
	}
	if _, ok := a.get(threadKey("D0DM", "0")); ok {
		t.Error("the oldest thread is still kept")
	}
	if _, ok := a.get(threadKey("D0DM", strconv.Itoa(maxAssistantThreads))); !ok || len(a.m) != maxAssistantThreads {
		t.Errorf("kept %d threads, the newest %v", len(a.m), ok)
	}
	// Other events are not the assistant's.
	if (&Bot{}).assistantEvent(t.Context(), t.Context(), socketmode.Event{Type: socketmode.EventTypeEventsAPI, Data: "not an event"}) {
		t.Error("a foreign event was taken")
	}
}

// The status text the agent gives while it works (DraftStatus) is what
// the keeper shows from then on; a refused update is logged, and the
// reply still comes. A first message without words gives no title.
func TestAssistantDraftStatus(t *testing.T) {
	hs := start(t, setup{})
	env := hs.srv.AssistantThread(slacktest.AssistantThreadEvent{})
	waitPrompts(t, hs.srv, 1)
	hs.h.SetReply(func(task mnemo.Task) (mnemo.Reply, error) {
		task.Stream.Status("reading facts/food.md…")
		hs.srv.FailNext("assistant.threads.setStatus", slacktest.APIError("internal_error"))
		task.Stream.Status("reading facts/pets.md…")
		return mnemo.Reply{Text: "done"}, nil
	})
	hs.srv.Message(slacktest.MessageEvent{ThreadTS: env.TS, Text: "**"})
	hs.quiet(t, 2)
	var shown []string
	for _, s := range hs.srv.Statuses() {
		shown = append(shown, s.Status)
	}
	if !slices.Equal(shown, []string{thinkingStatus, "is reading facts/food.md…", ""}) {
		t.Errorf("statuses %q", shown)
	}
	if !strings.Contains(hs.logs.String(), "cannot set the thread status") {
		t.Errorf("the refused status is not logged:\n%s", hs.logs)
	}
	if n := len(hs.srv.Titles()); n != 0 {
		t.Errorf("%d titles from a message without words", n)
	}
}
