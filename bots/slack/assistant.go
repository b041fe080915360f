package slack

import (
	"cmp"
	"context"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	slackgo "github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
	"github.com/slack-go/slack/socketmode"

	"github.com/mnemo-agent/mnemo/bots/internal/clean"
)

// Slack's AI-app (assistant) threads: the split view a person opens from
// the app's entry point. Each is a thread of the person's DM with the app,
// so its messages arrive as message.im events and are answered as a DM: a
// private conversation, with the person's private memory in scope,
// whatever channel they are looking at. The channel in the events'
// context is kept (logged, and replaced when the person moves) but given
// to no one: it is never a reason to read that channel's memory or
// messages, and the model is not told of it (it has no way to read the
// channel, and a bare id invites a guess).

// Assistant-thread limits and timings.
const (
	maxPrompts          = 4  // assistant.threads.setSuggestedPrompts takes up to four
	promptTopics        = 2  // episode titles and fact titles asked of memory, each
	maxPromptTitleRunes = 48 // a suggested prompt's button
	maxTopicRunes       = 80 // a topic inside a prompt's message
	maxThreadTitleRunes = 60 // assistant.threads.setTitle: the thread's line in the History tab
	maxAssistantThreads = 4096
	// statusRefresh re-sets a thread's "is thinking…" status while a reply
	// is worked on: Slack clears a status after about two minutes.
	statusRefresh = 90 * time.Second
)

// Topics is what the suggested prompts of an assistant thread are drawn
// from. Config.Memory may have it (cmd's does); without it every person
// gets the generic prompts.
type Topics interface {
	// Topics are the titles of user's newest episode entries (newest
	// first) and of their fact files, at most n of each, read from user's
	// own memory only.
	Topics(user string, n int) (recent, facts []string, err error)
}

// Assistant-thread event types.
const (
	eventThreadStarted        = "assistant_thread_started"
	eventThreadContextChanged = "assistant_thread_context_changed"
)

// assistantThread is what is kept of an assistant thread.
type assistantThread struct {
	author  string // the person's Slack user id
	viewing string // the channel they look at (context only), "" when none
	titled  bool   // its title was set, or may have been (unknown before)
}

// assistantThreads are the assistant threads seen since start, by
// "channel/thread_ts", at most maxAssistantThreads (the oldest go first:
// a thread forgotten is answered as any DM thread, just without a title).
type assistantThreads struct {
	mu        sync.Mutex
	m         map[string]*assistantThread
	order     []string
	noPrompts atomic.Bool // setSuggestedPrompts refused for good: said once
	noTitles  atomic.Bool // setTitle refused for good: said once
}

func threadKey(channel, ts string) string { return channel + "/" + ts }

// put keeps th under key and reports whether it is new (a redelivered
// thread start is not welcomed twice); an old one only gets th's
// viewing.
func (a *assistantThreads) put(key string, th assistantThread) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if old, ok := a.m[key]; ok {
		old.viewing = th.viewing
		return false
	}
	if a.m == nil {
		a.m = map[string]*assistantThread{}
	}
	if len(a.order) >= maxAssistantThreads {
		delete(a.m, a.order[0])
		a.order = a.order[1:]
	}
	a.m[key] = &th
	a.order = append(a.order, key)
	return true
}

// title marks the thread under key titled and reports whether it was a
// known thread without a title (the caller sets it).
func (a *assistantThreads) title(key string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	th, ok := a.m[key]
	if !ok || th.titled {
		return false
	}
	th.titled = true
	return true
}

// assistantEvent handles an assistant-thread event: it acknowledges it
// and reports true; false for any other event (left to the caller).
func (b *Bot) assistantEvent(ctx, taskCtx context.Context, evt socketmode.Event) bool {
	data, ok := evt.Data.(slackevents.EventsAPIEvent)
	// The type slack-go read: a message is not decoded twice.
	if !ok || data.Type != slackevents.CallbackEvent || data.InnerEvent.Type != eventThreadStarted && data.InnerEvent.Type != eventThreadContextChanged {
		return false
	}
	cb, ok := data.Data.(*slackevents.EventsAPICallbackEvent)
	if !ok {
		return false
	}
	b.ackRequest(ctx, evt.Request)
	var t slackevents.AssistantThread // as slack-go read it; zero (refused below) when it could not
	switch e := data.InnerEvent.Data.(type) {
	case *slackevents.AssistantThreadStartedEvent:
		t = e.AssistantThread
	case *slackevents.AssistantThreadContextChangedEvent:
		t = e.AssistantThread
	}
	log := b.log.With("event_id", cb.EventID, "event", data.InnerEvent.Type, "channel", t.ChannelID, "thread_ts", t.ThreadTimeStamp, "user", t.UserID)
	viewing := t.Context.ChannelID
	if !validID(t.UserID) || !validID(t.ChannelID) || !strings.HasPrefix(t.ChannelID, "D") || !validTS(t.ThreadTimeStamp) ||
		viewing != "" && !validID(viewing) {
		log.Debug("slack: assistant thread event ignored", "reason", "malformed ids")
		return true
	}
	key := threadKey(t.ChannelID, t.ThreadTimeStamp)
	if data.InnerEvent.Type == eventThreadContextChanged {
		// A thread not seen since start may have its title already.
		b.assist.put(key, assistantThread{author: t.UserID, viewing: viewing, titled: true})
		log.Debug("slack: assistant thread context", "viewing", viewing)
		return true
	}
	if !b.assist.put(key, assistantThread{author: t.UserID, viewing: viewing}) {
		log.Debug("slack: assistant thread already welcomed")
		return true
	}
	// The person's team: the workspace the event came for (the event
	// names no other; context.team_id is the viewed channel's).
	team := cmp.Or(cb.TeamID, b.teamID)
	b.spawn(ctx, func() { b.welcome(taskCtx, team, t.UserID, t.ChannelID, t.ThreadTimeStamp, log) })
	return true
}

// welcome greets a person who opened an assistant thread and sets its
// suggested prompts, drawn from their own memory. Someone not let in gets
// the access answer instead, and nothing of memory is read.
func (b *Bot) welcome(ctx context.Context, team, author, channel, threadTS string, log *slog.Logger) {
	if b.cfg.Access != nil {
		if ok, reply := b.cfg.Access.Check(ctx, b.who(team, channel, author)); !ok {
			if reply != "" {
				b.postInThread(ctx, channel, threadTS, toMrkdwn(reply), log)
			}
			return
		}
	}
	var recent, facts []string
	if t, ok := b.cfg.Memory.(Topics); ok {
		var err error
		if recent, facts, err = t.Topics(b.memoryUser(team, author), promptTopics); err != nil {
			log.Warn("slack: cannot read the person's memory for suggested prompts; suggesting generic ones", "error", err)
			recent, facts = nil, nil
		}
	}
	greeting, listTitle, prompts := suggestions(b.botName, recent, facts)
	b.postInThread(ctx, channel, threadTS, greeting, log)
	params := slackgo.AssistantThreadsSetSuggestedPromptsParameters{ChannelID: channel, ThreadTS: threadTS,
		Title: listTitle, Prompts: prompts}
	if err := b.api.SetAssistantThreadsSuggestedPromptsContext(ctx, params); err != nil {
		if refusedForGood(err) && b.assist.noPrompts.CompareAndSwap(false, true) {
			log.Warn("slack: cannot set suggested prompts (is the assistant:write scope granted, and assistant_view on in the manifest?)", "error", err)
		} else {
			log.Debug("slack: cannot set suggested prompts", "error", err)
		}
	}
}

// postInThread posts text in the thread (a 429 waited for, as replies
// are); a failure is logged.
func (b *Bot) postInThread(ctx context.Context, channel, threadTS, text string, log *slog.Logger) {
	err := b.patiently(ctx, "chat.postMessage", channel, func() error {
		_, _, err := b.api.PostMessageContext(ctx, channel, slackgo.MsgOptionText(text, false),
			slackgo.MsgOptionTS(threadTS), slackgo.MsgOptionDisableLinkUnfurl())
		return err
	})
	if err != nil {
		log.Warn("slack: cannot post in the assistant thread", "error", err)
	}
}

// suggestions are the greeting, the prompt list's title and up to
// maxPrompts prompts for a person whose memory has these newest episode
// titles and fact titles; generic ones for someone it has none of.
func suggestions(botName string, recent, facts []string) (greeting, title string, prompts []slackgo.AssistantThreadsPrompt) {
	add := func(title, message string) {
		if len(prompts) < maxPrompts {
			prompts = append(prompts, slackgo.AssistantThreadsPrompt{Title: cut(title, maxPromptTitleRunes), Message: message})
		}
	}
	for _, t := range recent {
		if t = cut(clean.Name(t), maxTopicRunes); t != "" {
			add("What did we decide about "+t+"?", "What did we decide about "+t+"? Remind me briefly, and what is still open.")
		}
	}
	for _, t := range facts {
		if t = cut(clean.Name(t), maxTopicRunes); t != "" {
			add("What do you remember about "+t+"?", "What do you remember about "+t+"?")
		}
	}
	if len(prompts) > 0 {
		add("What do you remember about me?", "What do you remember about me? A short list, please.")
		return "Welcome back. This conversation is private to you: I use what I remember about you here, " +
			"whichever channel is open beside it. Pick up where we left off, or ask me anything.", "Pick up where we left off", prompts
	}
	add("What can you do?", "What can you help me with, and what do you remember between conversations?")
	add("Let me introduce myself", "I'd like you to remember a few things about me and my work. Ask me three short questions to start.")
	add("Plan my day", "Help me plan my day: ask me what is on my plate, then suggest an order.")
	add("Draft a message", "Help me draft a short, clear message to my team. Ask me what it is about first.")
	return "Hi, I'm " + cmp.Or(botName, "mnemo") + ". I remember what you tell me, so you don't have to repeat yourself; " +
		"this conversation is private to you. Ask me anything, or try one of these.", "Try one of these", prompts
}

// cut is s with at most n runes: past that, cut at the last space before
// n-1 runes (or at n-1 without one) and ended with "…".
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)[:n-1]
	if i := strings.LastIndexByte(string(r), ' '); i > len(string(r))/2 {
		return strings.TrimRight(string(r)[:i], " ,.;:-") + "…"
	}
	return strings.TrimRight(string(r), " ") + "…"
}

// threadTitle is an assistant thread's title made from its first
// message: its first line that has words, without emphasis, quote or
// heading marks, cut at maxThreadTitleRunes. No model call: a title is
// wanted at once and for free, and the person's own first words name the
// thread about as well as a summary would. "" when the message has no
// words.
func threadTitle(text string) string {
	for line := range strings.Lines(text) {
		if t := strings.Trim(titleMarks.Replace(clean.Name(line)), " _>#"); t != "" {
			return cut(t, maxThreadTitleRunes)
		}
	}
	return ""
}

// titleMarks drops Markdown's emphasis and code marks from a title (an
// underscore stays: snake_case is a name).
var titleMarks = strings.NewReplacer("*", "", "`", "", "~", "")

// afterReply sets the title of an assistant thread from m, its first
// message, once m's reply is posted. Other messages, and threads not seen
// start since this process began, are left alone (a title may be there).
func (b *Bot) afterReply(ctx context.Context, m *incoming) {
	if !m.DM || m.threadTS == "" || !b.assist.title(threadKey(m.channel, m.threadTS)) {
		return
	}
	title := threadTitle(m.Text)
	if title == "" {
		return
	}
	p := slackgo.AssistantThreadsSetTitleParameters{ChannelID: m.channel, ThreadTS: m.threadTS, Title: title}
	if err := b.api.SetAssistantThreadsTitleContext(ctx, p); err != nil {
		if refusedForGood(err) && b.assist.noTitles.CompareAndSwap(false, true) {
			m.Log.Warn("slack: cannot set assistant thread titles (is the assistant:write scope granted?)", "error", err)
		} else {
			m.Log.Debug("slack: cannot set the thread title", "error", err)
		}
	}
}

// assistantTyping is the thinking indicator of m (stop, from
// startThinking) followed, once the reply is posted, by the thread's
// title (afterReply).
func (b *Bot) assistantTyping(ctx context.Context, m *incoming, stop func()) func() {
	return func() {
		stop()
		b.afterReply(ctx, m)
	}
}

// statusKeeper keeps a thread's assistant status shown while a reply is
// worked on: Slack clears a status after about two minutes, so it is set
// again every interval (statusRefresh) until stopped. update changes the
// text shown (DraftStatus); stop ends the refreshing and waits for it, so
// that no refresh comes after the status is cleared.
type statusKeeper struct {
	mu     sync.Mutex
	status string
	set    func(ctx context.Context, status string) error
	done   chan struct{}
	ended  chan struct{}
	stopMu sync.Once
}

// keepStatus starts refreshing status (already shown) with set every
// interval, until stop or ctx ends.
func keepStatus(ctx context.Context, interval time.Duration, status string, set func(context.Context, string) error) *statusKeeper {
	k := &statusKeeper{status: status, set: set, done: make(chan struct{}), ended: make(chan struct{})}
	go func() {
		defer close(k.ended)
		t := time.NewTimer(interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-k.done:
				return
			case <-t.C:
			}
			k.mu.Lock()              // held across the call: an update is never overtaken by an older text
			_ = k.set(ctx, k.status) // a failed refresh is tried again at the next tick
			k.mu.Unlock()
			t.Reset(interval)
		}
	}()
	return k
}

// update shows status now and keeps it.
func (k *statusKeeper) update(ctx context.Context, status string) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.status = status
	return k.set(ctx, status)
}

// stop ends the refreshing and waits for a refresh under way.
func (k *statusKeeper) stop() {
	k.stopMu.Do(func() { close(k.done) })
	<-k.ended
}

// keepThinking keeps m's thread status p (just shown) alive until the
// returned keeper is stopped, and lets DraftStatus change its text.
func (b *Bot) keepThinking(ctx context.Context, m *incoming, p slackgo.AssistantThreadsSetStatusParameters) *statusKeeper {
	m.status = keepStatus(ctx, b.statusEvery, p.Status, func(ctx context.Context, status string) error {
		q := p
		q.Status = status
		return b.api.SetAssistantThreadsStatusContext(ctx, q)
	})
	return m.status
}
