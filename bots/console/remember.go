package console

// "Remember this" in the terminal, which has no message menus and no
// buttons: /memory remember TEXT (or /remember TEXT) keeps TEXT, and
// /remember alone the message typed before it, as an explicit request,
// in the person's private memory; /memory undo takes the last keeping out
// again (while nothing changed the file since).

import (
	"context"
	"strings"
	"sync"

	"github.com/mnemo-agent/mnemo/bots/access"
	"github.com/mnemo-agent/mnemo/bots/internal/remember"
	"github.com/mnemo-agent/mnemo/bots/platform"
)

// remembering is the terminal's Remember this, per memory user.
type remembering struct {
	keeper platform.Keeper // nil: not available
	// last is user → their last message (for /remember alone): a plain
	// map, as said runs for every message and a sync.Map's Store
	// allocates each time.
	mu   sync.Mutex
	last map[string]string
	undo sync.Map // user → the token of their last keeping
}

// said notes text, a message user sent, for /remember alone.
func (r *remembering) said(user, text string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.last == nil {
		r.last = map[string]string{}
	}
	r.last[user] = text
}

// lastSaid is user's last message, if any (said).
func (r *remembering) lastSaid(user string) (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	text, ok := r.last[user]
	return text, ok
}

// command answers /remember [TEXT], /memory remember [TEXT] and /memory
// undo; ok is false for anything else.
func (r *remembering) command(ctx context.Context, user, text string) (Said, bool) {
	line := strings.TrimSpace(text)
	if !strings.HasPrefix(line, "/") {
		return Said{}, false // every message: no command, so no Fields to allocate
	}
	f := strings.Fields(line)
	if len(f) == 0 || strings.Contains(line, "\n") {
		return Said{}, false
	}
	var rest string
	switch {
	case f[0] == "/remember":
		rest = strings.TrimSpace(strings.TrimPrefix(line, "/remember"))
	case f[0] == "/memory" && len(f) > 1 && f[1] == "remember":
		rest = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(strings.TrimPrefix(line, "/memory")), "remember"))
	case f[0] == "/memory" && len(f) == 2 && f[1] == "undo":
		return r.undoLast(user), true
	default:
		return Said{}, false
	}
	if r.keeper == nil {
		return Said{Text: "Sorry, Remember this is not available here."}, true
	}
	if rest == "" {
		last, ok := r.lastSaid(user)
		if !ok {
			return Said{Text: "There is nothing to remember yet: `/memory remember TEXT` keeps TEXT, and `/remember` after a message keeps that message."}, true
		}
		rest = last
	}
	flow := remember.Flow{Service: r.keeper, Platform: Name}
	ans := flow.Keep(ctx, remember.Message{User: user, Speaker: user, Platform: Name, Own: true, Text: rest}, access.Who{})
	if ans.Undo != "" {
		r.undo.Store(user, ans.Undo)
		ans.Text += " `/memory undo` takes it out again."
	}
	return Said{Text: ans.Text}, true
}

// undoLast undoes user's last keeping.
func (r *remembering) undoLast(user string) Said {
	token, ok := r.undo.LoadAndDelete(user)
	if !ok || r.keeper == nil {
		return Said{Text: "There is nothing to undo: `/memory undo` takes out what `/memory remember` kept last."}
	}
	flow := remember.Flow{Service: r.keeper, Platform: Name}
	text, _ := flow.Undo(user, token.(string))
	return Said{Text: text}
}
