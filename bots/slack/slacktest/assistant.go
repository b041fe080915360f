package slacktest

import (
	"encoding/json"
	"strings"

	"github.com/mnemo-agent/mnemo/bots/internal/faketest"
)

// Slack's assistant-thread limits that the fake enforces.
const (
	// MaxSuggestedPrompts is how many prompts
	// assistant.threads.setSuggestedPrompts takes (Slack: "up to four");
	// more, none, or one without a title or a message answer
	// "invalid_arguments", Slack's error for arguments it refuses.
	MaxSuggestedPrompts = 4
)

// Assistant-thread event types (features.assistant_view apps).
const (
	AssistantThreadStarted        = "assistant_thread_started"
	AssistantThreadContextChanged = "assistant_thread_context_changed"
)

// AssistantThreadEvent builds an assistant_thread_started (the default) or
// assistant_thread_context_changed inner event, in Slack's shape:
//
//	{"type":"assistant_thread_started","assistant_thread":{"user_id":"U…",
//	 "context":{"channel_id":"C…","team_id":"T…","enterprise_id":"E…"},
//	 "channel_id":"D…","thread_ts":"…"},"event_ts":"…"}
//
// Zero fields: User DefaultUserID, Channel DefaultDMChannel (the person's
// DM with the app, where the thread lives), ThreadTS a fresh NextTS (the
// thread's root, stored as a message of subtype assistant_app_thread, as
// Slack makes it), ContextTeam the team id. ContextChannel "" sends an
// empty context (the person opened the assistant outside a channel).
type AssistantThreadEvent struct {
	Type              string
	User              string
	Channel           string
	ThreadTS          string
	ContextChannel    string
	ContextTeam       string
	ContextEnterprise string
}

type wireAssistantThread struct {
	Type            string `json:"type"`
	AssistantThread struct {
		UserID  string `json:"user_id"`
		Context struct {
			ChannelID    string `json:"channel_id,omitempty"`
			TeamID       string `json:"team_id,omitempty"`
			EnterpriseID string `json:"enterprise_id,omitempty"`
		} `json:"context"`
		ChannelID string `json:"channel_id"`
		ThreadTS  string `json:"thread_ts"`
	} `json:"assistant_thread"`
	EventTS string `json:"event_ts"`
}

func (e AssistantThreadEvent) build(s *Server) (json.RawMessage, string) {
	if e.Type == "" {
		e.Type = AssistantThreadStarted
	}
	if e.User == "" {
		e.User = DefaultUserID
	}
	if e.Channel == "" {
		e.Channel = DefaultDMChannel
	}
	if e.ThreadTS == "" {
		e.ThreadTS = s.nextTSLocked()
	}
	if e.ContextTeam == "" && e.ContextChannel != "" {
		e.ContextTeam = s.opts.TeamID
	}
	if e.Type == AssistantThreadStarted && s.findLocked(e.Channel, e.ThreadTS) < 0 {
		s.storeLocked(e.Channel, Message{Type: "message", SubType: "assistant_app_thread", User: e.User,
			Text: "New chat", TS: e.ThreadTS, ThreadTS: e.ThreadTS, Team: s.opts.TeamID})
	}
	var w wireAssistantThread
	w.Type = e.Type
	w.AssistantThread.UserID = e.User
	w.AssistantThread.Context.ChannelID = e.ContextChannel
	w.AssistantThread.Context.TeamID = e.ContextTeam
	w.AssistantThread.Context.EnterpriseID = e.ContextEnterprise
	w.AssistantThread.ChannelID = e.Channel
	w.AssistantThread.ThreadTS = e.ThreadTS
	w.EventTS = s.nextTSLocked()
	b, _ := json.Marshal(w)
	return b, e.ThreadTS
}

// AssistantThread is EventsAPI(e); the Envelope's TS is the thread's ts.
func (s *Server) AssistantThread(e AssistantThreadEvent) Envelope { return s.EventsAPI(e) }

// Prompt is one suggested prompt: the button's title and the message it
// sends.
type Prompt struct {
	Title   string `json:"title"`
	Message string `json:"message"`
}

// SuggestedPrompts is a successful assistant.threads.setSuggestedPrompts.
type SuggestedPrompts struct {
	Seq       int
	ChannelID string
	ThreadTS  string // "" sets them for the latest message of the channel
	Title     string // the list's title, optional
	Prompts   []Prompt
}

// ThreadTitle is a successful assistant.threads.setTitle.
type ThreadTitle struct {
	Seq       int
	ChannelID string
	ThreadTS  string
	Title     string
}

// assistantState is what the assistant.threads methods recorded.
type assistantState struct {
	prompts []SuggestedPrompts
	titles  []ThreadTitle
}

// SuggestedPromptsSet returns the successful
// assistant.threads.setSuggestedPrompts calls, in order.
func (s *Server) SuggestedPromptsSet() []SuggestedPrompts {
	return faketest.Copy(&s.mu, &s.assistant.prompts, func(p SuggestedPrompts) SuggestedPrompts {
		p.Prompts = append([]Prompt(nil), p.Prompts...)
		return p
	})
}

// Titles returns the successful assistant.threads.setTitle calls, in order.
func (s *Server) Titles() []ThreadTitle { return faketest.Copy(&s.mu, &s.assistant.titles, nil) }

// setSuggestedPrompts is assistant.threads.setSuggestedPrompts: channel_id
// and prompts (a JSON array of 1 to MaxSuggestedPrompts {title, message})
// required, thread_ts and title optional.
func (s *Server) setSuggestedPrompts(c *Call) apiResult {
	p := c.Params
	if p.Get("channel_id") == "" {
		return errResult("channel_not_found")
	}
	if ts := p.Get("thread_ts"); ts != "" && s.findLocked(p.Get("channel_id"), ts) < 0 {
		return errResult("invalid_thread_ts")
	}
	var prompts []Prompt
	if json.Unmarshal([]byte(p.Get("prompts")), &prompts) != nil || len(prompts) == 0 || len(prompts) > MaxSuggestedPrompts {
		return errResult("invalid_arguments")
	}
	for _, pr := range prompts {
		if strings.TrimSpace(pr.Title) == "" || strings.TrimSpace(pr.Message) == "" {
			return errResult("invalid_arguments")
		}
	}
	s.assistant.prompts = append(s.assistant.prompts, SuggestedPrompts{Seq: s.nextSeqLocked(),
		ChannelID: p.Get("channel_id"), ThreadTS: p.Get("thread_ts"), Title: p.Get("title"), Prompts: prompts})
	return okResult(nil)
}

// setTitle is assistant.threads.setTitle: channel_id, thread_ts (a thread
// of the channel) and title required.
func (s *Server) setTitle(c *Call) apiResult {
	p := c.Params
	switch {
	case p.Get("channel_id") == "":
		return errResult("channel_not_found")
	case p.Get("thread_ts") == "" || s.findLocked(p.Get("channel_id"), p.Get("thread_ts")) < 0:
		return errResult("invalid_thread_ts")
	case strings.TrimSpace(p.Get("title")) == "":
		return errResult("invalid_arguments")
	}
	s.assistant.titles = append(s.assistant.titles, ThreadTitle{Seq: s.nextSeqLocked(),
		ChannelID: p.Get("channel_id"), ThreadTS: p.Get("thread_ts"), Title: p.Get("title")})
	return okResult(nil)
}
