package remember

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/mnemo-agent/mnemo/bots/access"
	"github.com/mnemo-agent/mnemo/bots/internal/pipeline"
	"github.com/mnemo-agent/mnemo/bots/internal/remember/remembertest"
)

// budget is a fake pipeline.Budget: message and tokens say its refusals.
type budget struct {
	message, tokens string
	held, settled   int
}

func (b *budget) Message(string) (string, bool) { return b.message, true }
func (b *budget) Reserve(string, string) (int, string, bool) {
	if b.tokens != "" {
		return 0, b.tokens, true
	}
	b.held += 100
	return 100, "", false
}
func (b *budget) Settle(_ string, held, tokens int) { b.settled += held - tokens }

type refusals struct{ got []string }

func (r *refusals) Refused(platform, reason string) { r.got = append(r.got, platform+":"+reason) }

// keeper answers Keep with err, or paths.
type keeper struct {
	paths []string
	err   error
	undo  error
}

func (k keeper) Keep(context.Context, Message) (Kept, error) {
	return Kept{Paths: k.paths, Undo: "t"}, k.err
}
func (k keeper) Undo(string, string) ([]string, error) { return k.paths, k.undo }

var _ pipeline.Budget = (*budget)(nil)

func TestKeepRefusals(t *testing.T) {
	msg := Message{User: "slack-T1-U1", Text: "keep me", Own: true}
	for _, c := range []struct {
		name   string
		flow   Flow
		who    access.Who
		want   string
		kept   bool
		counts []string
	}{
		{"a person not let in gets the access answer", Flow{Access: access.NewGate(access.GateOptions{Platform: access.Slack,
			Policy: access.Policy{Mode: access.Allowlist}})}, access.Who{Platform: access.Slack, Team: "T1", User: "U1"},
			"mnemo access allow slack:T1/U1", false, nil},
		{"over the messages a minute", Flow{Budget: &budget{message: "rate"}}, access.Who{}, pipeline.RateReplyText, false, []string{"slack:rate"}},
		{"over the tokens a day", Flow{Budget: &budget{tokens: "tokens"}}, access.Who{}, pipeline.TokensReplyText, false, []string{"slack:tokens"}},
		{"within every budget", Flow{Budget: &budget{}}, access.Who{}, "Kept in your private memory: `episodes/2026-11.md`.", true, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			k := &remembertest.Keeper{}
			r := &refusals{}
			f := c.flow
			f.Service, f.Refusals, f.Platform = k, r, "slack"
			ans := f.Keep(context.Background(), msg, c.who)
			if !strings.Contains(ans.Text, c.want) || ans.Kept != c.kept || (len(k.Kept()) == 1) != c.kept {
				t.Errorf("answer %+v, kept %d", ans, len(k.Kept()))
			}
			if fmt.Sprint(r.got) != fmt.Sprint(c.counts) {
				t.Errorf("refusals counted %v, want %v", r.got, c.counts)
			}
			if b, ok := f.Budget.(*budget); ok && b.held != b.settled {
				t.Errorf("held %d, settled %d: the hold was not given back", b.held, b.settled)
			}
		})
	}
}

func TestKeepAnswers(t *testing.T) {
	for _, c := range []struct {
		name string
		k    keeper
		text string
		want string
		undo bool
	}{
		{"written", keeper{paths: []string{"facts/work.md", "episodes/2026-11.md"}}, "x", "Kept in your private memory: `facts/work.md`, `episodes/2026-11.md`.", true},
		{"nothing new", keeper{}, "x", "already has it", false},
		{"still writing", keeper{err: fmt.Errorf("%w: %w", ErrStillWriting, context.DeadlineExceeded)}, "x", "still writing", false},
		{"failed", keeper{err: errors.New("disk\nfull")}, "x", "couldn't write that to your memory just now (disk full)", false},
		{"no text", keeper{paths: []string{"x"}}, "  ", "no text I can keep", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := Flow{Service: c.k, Platform: "discord"}
			ans := f.Keep(context.Background(), Message{User: "u", Text: c.text}, access.Who{})
			if !strings.Contains(ans.Text, c.want) || (ans.Undo != "") != c.undo {
				t.Errorf("answer %+v, want %q", ans, c.want)
			}
		})
	}
}

func TestUndoAnswers(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
		done bool
	}{
		{nil, "Undone: episodes/2026-11.md is as it was before.", true},
		{ErrNotYours, "Only the person who kept this message can undo it.", false},
		{ErrUndoGone, "This Undo has expired", false},
		{fmt.Errorf("%w: facts/a.md was changed after it was kept", ErrChangedSince), "Nothing was undone: facts/a.md was changed after it was kept. Your memory", false},
		{errors.New("disk"), "couldn't undo that (disk); nothing was changed", false},
	} {
		f := Flow{Service: keeper{paths: []string{"episodes/2026-11.md"}, undo: c.err}}
		text, done := f.Undo("u", "t")
		if !strings.Contains(text, c.want) || done != c.done {
			t.Errorf("Undo with %v: %q, %v", c.err, text, done)
		}
	}
}
