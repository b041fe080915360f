package slack

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"time"

	slackgo "github.com/slack-go/slack"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/bots/internal/intake"
	"github.com/mnemo-agent/mnemo/bots/internal/pipeline"
)

// platform is what Slack does for the pipeline (pipeline.Platform):
// everything else of a message's way is the pipeline's.
type platform struct{ b *Bot }

var (
	_ pipeline.Platform[*incoming]    = platform{}
	_ pipeline.Drafter[*incoming]     = platform{}
	_ pipeline.Statuser[*incoming]    = platform{}
	_ pipeline.DraftFinder[*incoming] = platform{}
)

// Encode is the message as the journal keeps it (wireIncoming).
func (platform) Encode(m *incoming) []byte {
	data, _ := json.Marshal(m.wire()) // strings and bools only
	return data
}

// Decode is a journaled message back, after a restart.
func (p platform) Decode(e intake.Entry, log *slog.Logger) (*incoming, error) {
	m, err := pipeline.DecodeJSON[wireIncoming](e, log)
	if err == nil {
		m.User = p.b.memoryUser(m.team, m.author)
	}
	return m, err
}

// Ack acknowledges m's envelope (it is durable, or a redelivery).
func (p platform) Ack(ctx context.Context, m *incoming) {
	if m.envelope != "" {
		p.b.ack(ctx, m.envelope, nil)
	}
}

// Typing shows that the bot is working (startThinking).
func (p platform) Typing(ctx context.Context, m *incoming) (stop func()) {
	return p.b.assistantTyping(ctx, m, p.b.startThinking(ctx, m, m.Log))
}

// Prepare reads the speaker's name, names the channel's memory and reads
// the thread a mention was written in.
func (p platform) Prepare(ctx context.Context, m *incoming, t *mnemo.Task) {
	t.Speaker = p.b.userName(ctx, m.author)
	t.Origin = p.b.origin(m)
	if m.DM {
		return
	}
	// The channel's own memory (a group DM counts as a channel). The team
	// is the workspace it was delivered for: a shared channel's memory
	// stays per workspace.
	t.ChannelKey = mnemo.ChannelKey("slack", m.workspace, m.channel)
	if m.threadTS != "" && m.threadTS != m.ts {
		t.Context = p.b.threadContext(ctx, m, t.Speaker, m.Log)
	}
}

// Parts is the reply formatted as mrkdwn messages (replyParts).
func (p platform) Parts(m *incoming, text string) []string { return p.b.replyParts(m.channel, text) }

// PostPart posts part i in m's reply thread, with metadata naming the
// message answered and the part, so that Posted can find it.
func (p platform) PostPart(ctx context.Context, m *incoming, i int, part string) error {
	_, err := p.b.startDraft(ctx, m, pipeline.DraftEdit{Part: i, Text: part})
	return err
}

// DraftInterval: chat.update is Tier 3 (about 50 a minute); one update a
// second per message stays within it.
func (p platform) DraftInterval() time.Duration { return p.b.editEvery }

// StartDraft posts part e.Part of a streamed reply (startDraft) and
// returns its ts.
func (p platform) StartDraft(ctx context.Context, m *incoming, e pipeline.DraftEdit) (string, error) {
	return p.b.startDraft(ctx, m, e)
}

// DraftStatus shows what the agent does ("is reading facts/user.md…") as
// the thread's assistant status, where the thinking indicator is one.
func (p platform) DraftStatus(ctx context.Context, m *incoming, status string) {
	if m.replyTS == "" || p.b.noStatus.Load() {
		return
	}
	status = "is " + strings.TrimSpace(status)
	if status == "is " {
		status = thinkingStatus
	}
	if r := []rune(status); len(r) > maxStatusRunes {
		status = string(r[:maxStatusRunes-1]) + "…"
	}
	params := slackgo.AssistantThreadsSetStatusParameters{ChannelID: m.channel, ThreadTS: m.replyTS, Status: status}
	set := p.b.api.SetAssistantThreadsStatusContext
	if m.status != nil { // kept shown past Slack's expiry: the new text too
		set = func(ctx context.Context, _ slackgo.AssistantThreadsSetStatusParameters) error {
			return m.status.update(ctx, status)
		}
	}
	if err := set(ctx, params); err != nil {
		m.Log.Debug("slack: cannot set the thread status", "error", err)
	}
}

// maxStatusRunes bounds an assistant status (Slack shows a short line).
const maxStatusRunes = 100

// FindDraft finds the first message of m's reply a crash left
// unjournaled (findDraft).
func (p platform) FindDraft(ctx context.Context, m *incoming) string { return p.b.findDraft(ctx, m) }

// EditDraft updates a message of a streamed reply (editDraft).
func (p platform) EditDraft(ctx context.Context, m *incoming, e pipeline.DraftEdit) error {
	return p.b.editDraft(ctx, m, e)
}

// Posted is how many parts of m's reply are in the conversation already
// (postedParts).
func (p platform) Posted(ctx context.Context, m *incoming, _ []string) int {
	return p.b.postedParts(ctx, m)
}
