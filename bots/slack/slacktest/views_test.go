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

// Each of Block Kit's limits is refused with invalid_arguments and the
// JSON pointer of the first block past it; nothing is kept.
func TestViewsPublishRefuses(t *testing.T) {
	long := func(n int) string { return strings.Repeat("é", n) }
	for _, c := range []struct{ user, view, ptr string }{
		{"", `{"type":"home","blocks":[]}`, "/user_id"},
		{"U1", `not json`, "/view"},
		{"U1", ``, "/view"},
		{"U1", `{"type":"modal","blocks":[]}`, "/view/type"},
		{"U1", `{"type":"home","blocks":[` + strings.TrimSuffix(strings.Repeat(`{"type":"divider"},`, 101), ",") + `]}`, "/view/blocks"},
		{"U1", `{"type":"home","private_metadata":"` + long(3001) + `","blocks":[]}`, "/view/private_metadata"},
		{"U1", `{"type":"home","blocks":[{"type":"divider","block_id":"a"},{"type":"divider","block_id":"a"}]}`, "/view/blocks/1/block_id"},
		{"U1", `{"type":"home","blocks":[{"type":"divider","block_id":"` + long(256) + `"}]}`, "/view/blocks/0/block_id"},
		{"U1", `{"type":"home","blocks":[{"type":"section","text":{"type":"mrkdwn","text":"` + long(3001) + `"}}]}`, "/view/blocks/0/text/text"},
		{"U1", `{"type":"home","blocks":[{"type":"header","text":{"type":"mrkdwn","text":"x"}}]}`, "/view/blocks/0/text"},
		{"U1", `{"type":"home","blocks":[{"type":"header","text":{"type":"plain_text","text":"` + long(151) + `"}}]}`, "/view/blocks/0/text"},
		{"U1", `{"type":"home","blocks":[{"type":"header"}]}`, "/view/blocks/0/text"},
		{"U1", `{"type":"home","blocks":[{"type":"input"}]}`, "/view/blocks/0"},
		{"U1", `{"type":"home","blocks":[{"type":"actions","elements":[{"type":"button","action_id":"a"},{"type":"button","action_id":"a"}]}]}`, "/view/blocks/0/elements/1/action_id"},
		{"U1", `{"type":"home","blocks":[{"type":"actions","elements":[{"type":"button","action_id":"` + long(256) + `"}]}]}`, "/view/blocks/0/elements/0/action_id"},
		{"U1", `{"type":"home","blocks":[{"type":"section","text":{"type":"mrkdwn","text":"x"},"accessory":{"type":"button","action_id":"b","value":"` + long(2001) + `"}}]}`, "/view/blocks/0/elements/0/value"},
		{"U1", `{"type":"home","blocks":[{"type":"input","element":{"type":"plain_text_input","action_id":"` + long(256) + `"}}]}`, "/view/blocks/0/elements/0/action_id"},
	} {
		s := &Server{}
		body := s.viewsPublish(&Call{Params: url.Values{"user_id": {c.user}, "view": {c.view}}}).body.(map[string]any)
		msgs := body["response_metadata"].(map[string]any)["messages"].([]string)
		if body["error"] != "invalid_arguments" || !strings.HasSuffix(msgs[0], "[json-pointer:"+c.ptr+"]") || len(s.views) != 0 {
			t.Errorf("%.80s: %v", c.view, body)
		}
	}
	// A view without blocks is kept with null blocks; a press in it sends [].
	s := New(t, Options{})
	s.viewsPublish(&Call{Params: url.Values{"user_id": {"U1"}, "view": {`{"type":"home"}`}}})
	if vs := s.Views("U1"); len(vs) != 1 || string(vs[0].Blocks) != "null" {
		t.Errorf("views %+v", vs)
	}
	env := s.PressHome(HomeAction{User: "U1", ActionID: "a", Value: "v"})
	if !strings.Contains(string(env.Payload), `"blocks":[]`) || !strings.Contains(string(env.Payload), `"text":{"text":"button","type":"plain_text"}`) {
		t.Errorf("payload %s", env.Payload)
	}
}
