package slacktest

import (
	"context"
	"encoding/json"
	"net/url"
	"strings"
	"testing"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
	"github.com/slack-go/slack/socketmode"
)

// slack-go's PublishViewContext reaches views.publish with the view as
// JSON; the view is kept per user (Views, WaitViews), a refused one is
// not; the events a Home tab needs arrive as socketmode reads them.
func TestViewsPublishAndHomeEvents(t *testing.T) {
	srv, api := newServer(t, Options{})
	view := slack.HomeTabViewRequest{Type: slack.VTHomeTab, PrivateMetadata: "T0TEAM/U1", CallbackID: "tab",
		Blocks: slack.Blocks{BlockSet: []slack.Block{slack.NewDividerBlock()}}}
	if _, err := api.PublishViewContext(context.Background(), slack.PublishViewContextRequest{UserID: "U1", View: view}); err != nil {
		t.Fatal(err)
	}
	view.Type = "modal"
	_, err := api.PublishViewContext(context.Background(), slack.PublishViewContextRequest{UserID: "U2", View: view})
	if err == nil || !strings.Contains(err.Error(), "invalid_arguments") {
		t.Errorf("a modal: %v", err)
	}
	vs, err := srv.WaitViews("U1", 1, wait)
	if err != nil || len(vs) != 1 || vs[0].PrivateMetadata != "T0TEAM/U1" || vs[0].CallbackID != "tab" || string(vs[0].Blocks) != `[{"type":"divider"}]` {
		t.Fatalf("views %+v, %v", vs, err)
	}
	if len(srv.Views("")) != 1 || len(srv.Views("U2")) != 0 {
		t.Errorf("views %+v", srv.Views(""))
	}

	c := startClient(t, api)
	srv.AppHomeOpened("U1", "home")
	ev := c.next(t, socketmode.EventTypeEventsAPI)
	cb := ev.Data.(slackevents.EventsAPIEvent).Data.(*slackevents.EventsAPICallbackEvent)
	var in map[string]any
	json.Unmarshal(*cb.InnerEvent, &in)
	if in["type"] != "app_home_opened" || in["user"] != "U1" || in["tab"] != "home" || cb.TeamID != "T0TEAM" {
		t.Errorf("app_home_opened %v", in)
	}
	srv.PressHome(HomeAction{User: "U1", View: vs[0], ActionID: "search", Type: "plain_text_input", Value: "ramen"})
	ev = c.next(t, socketmode.EventTypeInteractive)
	ic := ev.Data.(slack.InteractionCallback)
	if ic.Type != slack.InteractionTypeBlockActions || ic.Container.Type != "view" || ic.View.Type != slack.VTHomeTab ||
		ic.View.PrivateMetadata != "T0TEAM/U1" || ic.User.ID != "U1" || ic.Team.ID != "T0TEAM" || ic.ResponseURL != "" ||
		len(ic.ActionCallback.BlockActions) != 1 || ic.ActionCallback.BlockActions[0].Value != "ramen" {
		t.Errorf("block_actions %+v", ic)
	}
}

// FuzzViewsPublish: any view is kept or refused with invalid_arguments
// naming where, never a panic, and a kept one is within the limits.
func FuzzViewsPublish(f *testing.F) {
	f.Add("U1", `{"type":"home","blocks":[{"type":"section","text":{"type":"mrkdwn","text":"x"}}]}`)
	f.Add("U1", `{"type":"home","blocks":[{"type":"actions","block_id":"a","elements":[{"type":"button","action_id":"x","value":"v"},{"type":"button","action_id":"x"}]}]}`)
	f.Add("", `{}`)
	f.Add("U1", `{"type":"home","blocks":[{"type":"input"}]}`)
	f.Fuzz(func(t *testing.T, user, view string) {
		s := &Server{}
		res := s.viewsPublish(&Call{Params: url.Values{"user_id": {user}, "view": {view}}})
		body := res.body.(map[string]any)
		if body["ok"] == true {
			var v struct {
				Blocks []wireBlock `json:"blocks"`
			}
			if json.Unmarshal([]byte(view), &v) != nil || len(v.Blocks) > MaxViewBlocks || user == "" || len(s.views) != 1 {
				t.Fatalf("kept %q for %q", view, user)
			}
			return
		}
		if body["error"] != "invalid_arguments" || !strings.Contains(strings.Join(body["response_metadata"].(map[string]any)["messages"].([]string), ""), "[json-pointer:/") {
			t.Fatalf("answer %v", body)
		}
	})
}
