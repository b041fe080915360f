package slack

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"runtime/debug"
	"strings"

	slackgo "github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
	"github.com/slack-go/slack/socketmode"

	"github.com/mnemo-agent/mnemo/bots/internal/memorycmd"
	plat "github.com/mnemo-agent/mnemo/bots/platform"
)

// HomeMemory is what the App Home tab reads of a person's memory beyond
// /memory's; the app's memory (Config.Memory) satisfies it. A Memory
// without it gives a tab that says memory is not available.
type HomeMemory interface {
	// Home is user's own memory files (private and shared, never a
	// channel's) and newest episode entries.
	Home(user string) (plat.Home, error)
	// SearchHome is user's own memory searched, best first.
	SearchHome(user, query string, limit int) ([]plat.HomeHit, error)
}

// Texts of the tab when there is nothing of the person's to show (mrkdwn).
const (
	homeNoMemory = "Memory is not available on this server."
	homeBroken   = "Sorry, I couldn't read what I remember about you just now. I'll show it again at the next change, or when you open this tab again."
	searchBroken = "Sorry, I couldn't search what I remember just now. Please try again later."
)

// MemoryChanged re-publishes the Home tab of memory user user when they
// opened it since the start (the app calls it after every change of their
// memory: a reflection, a hand edit, a forget), at most once every
// homeEvery for each person, the last change always shown. It never
// blocks.
func (b *Bot) MemoryChanged(user string) { b.home.changed(user) }

// homeOpened handles an app_home_opened event (already acked): the
// person's tab is published, and kept current from then on. It reports
// whether evt was one.
func (b *Bot) homeOpened(ctx context.Context, evt socketmode.Event) bool {
	data, ok := evt.Data.(slackevents.EventsAPIEvent)
	if !ok {
		return false
	}
	cb, ok := data.Data.(*slackevents.EventsAPICallbackEvent)
	if !ok || cb.InnerEvent == nil {
		return false
	}
	var in struct {
		Type    string `json:"type"`
		User    string `json:"user"`
		Channel string `json:"channel"`
		Tab     string `json:"tab"`
	}
	if json.Unmarshal(*cb.InnerEvent, &in) != nil || in.Type != "app_home_opened" {
		return false
	}
	team := cmp.Or(cb.TeamID, b.teamID)
	if in.Tab != "home" || !validID(team) || !validID(in.User) || in.Channel != "" && !validID(in.Channel) {
		b.log.Debug("slack: app_home_opened ignored", "tab", in.Tab, "user", in.User)
		return true
	}
	b.spawn(ctx, func() {
		if b.homeAllowed(ctx, team, in.User, in.Channel) {
			b.home.person(team, in.User, b.memoryUser(team, in.User), nil)
		}
	})
	return true
}

// homeAction handles a press in a Home tab (already acked): a button of a
// file, of a forget's confirmation, or the search box. It reports whether
// cb was one.
func (b *Bot) homeAction(ctx, taskCtx context.Context, cb slackgo.InteractionCallback) bool {
	if cb.View.Type != slackgo.VTHomeTab || cb.Container.Type != "view" {
		return false
	}
	for _, a := range cb.ActionCallback.BlockActions {
		if a != nil && strings.HasPrefix(a.ActionID, homePrefix) {
			action, value := a.ActionID, a.Value
			b.spawn(ctx, func() { b.homePress(taskCtx, cb, action, value) })
			return true
		}
	}
	return false
}

// homePress carries out one press of the tab's owner; anyone else's (a
// view not published to them: another user id or team) changes nothing.
func (b *Bot) homePress(ctx context.Context, cb slackgo.InteractionCallback, action, value string) {
	team, user := cb.Team.ID, cb.User.ID
	if !validID(team) || !validID(user) || cb.View.PrivateMetadata != team+"/"+user {
		b.log.Warn("slack: a Home tab button was pressed by someone other than its owner; nothing was changed",
			"team", team, "user", user, "action", action)
		return
	}
	if !b.homeAllowed(ctx, team, user, "") {
		return
	}
	asker := memorycmd.Asker{ID: team + "/" + user, User: b.memoryUser(team, user), Own: "slack-" + team + "-" + user}
	// The flow runs first, outside homeTabs' lock: a change it makes is
	// told back to MemoryChanged at once (the app's store does).
	var change func(p *homePerson)
	switch action {
	case actionHomeShare, actionHomePrivate:
		kind := map[bool]memorycmd.Kind{true: memorycmd.Share, false: memorycmd.Private}[action == actionHomeShare]
		notice := b.flow.Handle(memorycmd.Command{Kind: kind, Target: value}, asker).Text
		change = func(p *homePerson) { p.notice, p.confirm = notice, "" }
	case actionHomeForget:
		// The /memory forget flow: a question with Delete and Cancel.
		ans := b.flow.Handle(memorycmd.Command{Kind: memorycmd.Forget, Target: value}, asker)
		change = func(p *homePerson) {
			p.notice, p.confirm, p.confirmText = "", ans.Confirm, ans.Text
			if ans.Confirm == "" {
				p.notice = ans.Text
			}
		}
	case actionHomeConfirm, actionHomeCancel:
		text, wrongUser := b.flow.Button(value, asker.ID, action == actionHomeConfirm)
		change = func(p *homePerson) {
			p.notice = text
			if !wrongUser && p.confirm == value {
				p.confirm, p.confirmText = "", ""
			}
		}
	case actionHomeSearch:
		query := cutRunes(strings.Join(strings.Fields(value), " "), maxQueryRunes)
		change = func(p *homePerson) { p.query, p.notice = query, "" }
	}
	b.home.person(team, user, asker.User, change)
}

// homeAllowed reports whether the access policy lets team/user in;
// someone it does not gets its refusal as their tab, and nothing of memory.
func (b *Bot) homeAllowed(ctx context.Context, team, user, channel string) bool {
	if b.cfg.Access != nil {
		if ok, reply := b.cfg.Access.CheckCommand(ctx, b.who(team, channel, user)); !ok {
			b.publishRefusal(ctx, user, reply)
			return false
		}
	}
	return true
}

// publishRefusal shows reply (Markdown) as the whole tab of user.
func (b *Bot) publishRefusal(ctx context.Context, user, reply string) {
	view := slackgo.HomeTabViewRequest{Type: slackgo.VTHomeTab, Blocks: slackgo.Blocks{BlockSet: []slackgo.Block{
		slackgo.NewHeaderBlock(plain(homeTitle)), section(homePrefix+"refused", toMrkdwn(reply))}}}
	if _, err := b.api.PublishViewContext(ctx, slackgo.PublishViewContextRequest{UserID: user, View: view}); err != nil {
		b.log.Warn("slack: cannot publish a Home tab", "user", user, "error", redactErr(err))
	}
}

// publishHome publishes p's tab as their memory is now (homeTabs.publish).
func (b *Bot) publishHome(ctx context.Context, p homePerson) error {
	view := homeView(p, b.homeContent(p))
	_, err := b.api.PublishViewContext(ctx, slackgo.PublishViewContextRequest{UserID: p.user, View: view})
	if _, limited := errors.AsType[*slackgo.RateLimitedError](err); err != nil && !limited && ctx.Err() == nil {
		b.log.Warn("slack: cannot publish a Home tab", "user", p.user, "error", redactErr(err))
	}
	return err
}

// homeContent reads what p's tab shows of their memory; an error or a
// panic of the memory is a polite text (the error logged).
func (b *Bot) homeContent(p homePerson) (c homeContent) {
	hm, ok := b.cfg.Memory.(HomeMemory)
	if !ok {
		c.homeErr = homeNoMemory
		return c
	}
	defer func() {
		if r := recover(); r != nil {
			b.log.Error("slack: reading the memory for a Home tab panicked", "panic", r, "stack", string(debug.Stack()))
			c = homeContent{homeErr: homeBroken}
		}
	}()
	var err error
	if c.home, err = hm.Home(p.memUser); err != nil {
		b.log.Warn("slack: cannot read the memory for a Home tab", "memory_user", p.memUser, "error", err)
		c.homeErr = homeBroken
	}
	if p.query != "" {
		if c.hits, err = hm.SearchHome(p.memUser, p.query, homeHits+1); err != nil {
			b.log.Warn("slack: cannot search the memory for a Home tab", "memory_user", p.memUser, "error", err)
			c.searchErr = searchBroken
		}
	}
	return c
}
