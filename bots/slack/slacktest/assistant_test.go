package slacktest

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
	"github.com/slack-go/slack/socketmode"
)

// The assistant events come in Slack's shape (slack-go parses them as its
// own types), and a started thread's root is stored as Slack makes it.
func TestAssistantThreadEvents(t *testing.T) {
	srv, api := newServer(t, Options{})
	c := startClient(t, api)
	env := srv.AssistantThread(AssistantThreadEvent{ContextChannel: "C0VIEW", ContextEnterprise: "E0ENT"})
	changed := srv.AssistantThread(AssistantThreadEvent{Type: AssistantThreadContextChanged, ThreadTS: env.TS, ContextChannel: "C0NEXT"})
	for i, want := range []struct{ typ, viewing string }{{AssistantThreadStarted, "C0VIEW"}, {AssistantThreadContextChanged, "C0NEXT"}} {
		evt := c.next(t, socketmode.EventTypeEventsAPI)
		c.sm.Ack(*evt.Request)
		inner := evt.Data.(slackevents.EventsAPIEvent).InnerEvent
		var th slackevents.AssistantThread
		switch e := inner.Data.(type) {
		case *slackevents.AssistantThreadStartedEvent:
			th = e.AssistantThread
		case *slackevents.AssistantThreadContextChangedEvent:
			th = e.AssistantThread
		default:
			t.Fatalf("event %d: %T", i, inner.Data)
		}
		if inner.Type != want.typ || th.UserID != DefaultUserID || th.ChannelID != DefaultDMChannel || th.ThreadTimeStamp != env.TS ||
			th.Context.ChannelID != want.viewing || th.Context.TeamID != srv.Options().TeamID {
			t.Errorf("event %d: %s %+v", i, inner.Type, th)
		}
	}
	if changed.TS != env.TS {
		t.Errorf("context_changed TS %q, want the thread's %q", changed.TS, env.TS)
	}
	msgs := srv.ChannelMessages(DefaultDMChannel)
	if len(msgs) != 1 || msgs[0].SubType != "assistant_app_thread" || msgs[0].TS != env.TS {
		t.Errorf("thread root: %+v", msgs)
	}
}

// setSuggestedPrompts takes one to four prompts with a title and a
// message each; setTitle a thread the channel holds and a title. Every
// refusal is Slack's error code and records nothing.
func TestAssistantMethods(t *testing.T) {
	srv, api := newServer(t, Options{})
	ts := srv.AssistantThread(AssistantThreadEvent{}).TS
	ctx := context.Background()
	prompts := func(n int) []slack.AssistantThreadsPrompt {
		var ps []slack.AssistantThreadsPrompt
		for i := range n {
			ps = append(ps, slack.AssistantThreadsPrompt{Title: "t" + string(rune('a'+i)), Message: "m"})
		}
		return ps
	}
	for _, c := range []struct {
		name string
		p    slack.AssistantThreadsSetSuggestedPromptsParameters
		want string
	}{
		{"four", slack.AssistantThreadsSetSuggestedPromptsParameters{ChannelID: DefaultDMChannel, ThreadTS: ts, Title: "Try", Prompts: prompts(4)}, ""},
		{"no thread_ts", slack.AssistantThreadsSetSuggestedPromptsParameters{ChannelID: DefaultDMChannel, Prompts: prompts(1)}, ""},
		{"five", slack.AssistantThreadsSetSuggestedPromptsParameters{ChannelID: DefaultDMChannel, ThreadTS: ts, Prompts: prompts(5)}, "invalid_arguments"},
		{"none", slack.AssistantThreadsSetSuggestedPromptsParameters{ChannelID: DefaultDMChannel, ThreadTS: ts}, "invalid_arguments"},
		{"no message", slack.AssistantThreadsSetSuggestedPromptsParameters{ChannelID: DefaultDMChannel, ThreadTS: ts,
			Prompts: []slack.AssistantThreadsPrompt{{Title: "x"}}}, "invalid_arguments"},
		{"no channel", slack.AssistantThreadsSetSuggestedPromptsParameters{ThreadTS: ts, Prompts: prompts(1)}, "channel_not_found"},
		{"unknown thread", slack.AssistantThreadsSetSuggestedPromptsParameters{ChannelID: DefaultDMChannel, ThreadTS: "1.2", Prompts: prompts(1)}, "invalid_thread_ts"},
	} {
		err := api.SetAssistantThreadsSuggestedPromptsContext(ctx, c.p)
		if got := errCode(err); got != c.want {
			t.Errorf("%s: error %q (%v), want %q", c.name, got, err, c.want)
		}
	}
	got := srv.SuggestedPromptsSet()
	if len(got) != 2 || got[0].Title != "Try" || len(got[0].Prompts) != 4 || got[0].Prompts[3].Title != "td" || got[0].ThreadTS != ts || got[1].ThreadTS != "" {
		t.Errorf("recorded prompts: %+v", got)
	}
	for _, c := range []struct {
		name string
		p    slack.AssistantThreadsSetTitleParameters
		want string
	}{
		{"ok", slack.AssistantThreadsSetTitleParameters{ChannelID: DefaultDMChannel, ThreadTS: ts, Title: "Holidays"}, ""},
		{"no title", slack.AssistantThreadsSetTitleParameters{ChannelID: DefaultDMChannel, ThreadTS: ts}, "invalid_arguments"},
		{"unknown thread", slack.AssistantThreadsSetTitleParameters{ChannelID: DefaultDMChannel, ThreadTS: "1.2", Title: "x"}, "invalid_thread_ts"},
		{"no channel", slack.AssistantThreadsSetTitleParameters{ThreadTS: ts, Title: "x"}, "channel_not_found"},
	} {
		err := api.SetAssistantThreadsTitleContext(ctx, c.p)
		if got := errCode(err); got != c.want {
			t.Errorf("setTitle %s: error %q (%v), want %q", c.name, got, err, c.want)
		}
	}
	if got := srv.Titles(); len(got) != 1 || got[0].Title != "Holidays" || got[0].ThreadTS != ts || got[0].ChannelID != DefaultDMChannel {
		t.Errorf("recorded titles: %+v", got)
	}
	// The prompts went as Slack documents them: a JSON array of {title, message}.
	var sent []Prompt
	calls := srv.Calls("assistant.threads.setSuggestedPrompts")
	if err := json.Unmarshal([]byte(calls[0].Params.Get("prompts")), &sent); err != nil || len(sent) != 4 {
		t.Errorf("prompts parameter %q: %v", calls[0].Params.Get("prompts"), err)
	}
}

func errCode(err error) string {
	if err == nil {
		return ""
	}
	if e, ok := err.(slack.SlackErrorResponse); ok {
		return e.Err
	}
	return strings.TrimSpace(err.Error())
}
