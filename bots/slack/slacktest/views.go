package slacktest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/mnemo-agent/mnemo/bots/internal/faketest"
)

// Block Kit's limits on a view that views.publish enforces, each answered
// {"ok":false,"error":"invalid_arguments","response_metadata":{"messages":
// ["[ERROR] … [json-pointer:…]"]}} as Slack does.
const (
	MaxViewBlocks      = 100  // blocks in a view
	MaxButtonValue     = 2000 // characters of a button's value
	MaxActionID        = 255  // characters of an action_id (and a block_id)
	MaxPrivateMetadata = 3000 // characters of a view's private_metadata
	MaxHeaderText      = 150  // characters of a header block's text
)

// View is a successful views.publish: the view a user's App Home tab shows.
type View struct {
	Seq             int
	UserID          string
	Type            string // "home"
	Blocks          json.RawMessage
	PrivateMetadata string
	CallbackID      string
	Raw             json.RawMessage // the whole view as sent
	Time            time.Time
}

func (v View) clone() View {
	v.Blocks, v.Raw = bytes.Clone(v.Blocks), bytes.Clone(v.Raw)
	return v
}

// wireBlock is what views.publish checks of a block.
type wireBlock struct {
	Type    string        `json:"type"`
	BlockID string        `json:"block_id"`
	Text    *wireText     `json:"text"`
	Element *wireElement  `json:"element"`
	Elems   []wireElement `json:"elements"`
	Access  *wireElement  `json:"accessory"`
}

type wireText struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type wireElement struct {
	Type     string `json:"type"`
	ActionID string `json:"action_id"`
	Value    string `json:"value"`
}

// viewsPublish is views.publish: user_id and a view of type "home" within
// Block Kit's limits, kept as the user's tab (Views).
func (s *Server) viewsPublish(c *Call) apiResult {
	p := c.Params
	var view struct {
		Type            string      `json:"type"`
		Blocks          []wireBlock `json:"blocks"`
		PrivateMetadata string      `json:"private_metadata"`
		CallbackID      string      `json:"callback_id"`
	}
	raw := p.Get("view")
	switch {
	case p.Get("user_id") == "":
		return invalidArguments("missing required field: user_id", "/user_id")
	case raw == "" || json.Unmarshal([]byte(raw), &view) != nil:
		return invalidArguments("must provide an object", "/view")
	case view.Type != "home":
		return invalidArguments("must be a valid enum value", "/view/type")
	case len(view.Blocks) > MaxViewBlocks:
		return invalidArguments(fmt.Sprintf("must provide at most %d items", MaxViewBlocks), "/view/blocks")
	case utf8.RuneCountInString(view.PrivateMetadata) > MaxPrivateMetadata:
		return invalidArguments(fmt.Sprintf("must be less than %d characters", MaxPrivateMetadata+1), "/view/private_metadata")
	}
	if msg, ptr := checkBlocks(view.Blocks); msg != "" {
		return invalidArguments(msg, ptr)
	}
	v := View{UserID: p.Get("user_id"), Type: view.Type, Blocks: mustField(raw, "blocks"), PrivateMetadata: view.PrivateMetadata,
		CallbackID: view.CallbackID, Raw: json.RawMessage(raw), Time: c.Time}
	v.Seq = s.nextSeqLocked()
	s.views = append(s.views, v)
	return okResult(map[string]any{"view": map[string]any{"id": "V" + faketest.RandomHex(5), "type": "home",
		"team_id": s.opts.TeamID, "private_metadata": view.PrivateMetadata, "callback_id": view.CallbackID}})
}

// checkBlocks finds the first block past a limit: the message and the
// JSON pointer Slack's answer names, or "".
func checkBlocks(blocks []wireBlock) (msg, ptr string) {
	ids := map[string]bool{}
	for i, b := range blocks {
		at := fmt.Sprintf("/view/blocks/%d", i)
		switch {
		case b.BlockID != "" && ids[b.BlockID]:
			return "duplicate block_id: " + b.BlockID, at + "/block_id"
		case utf8.RuneCountInString(b.BlockID) > MaxActionID:
			return fmt.Sprintf("must be less than %d characters", MaxActionID+1), at + "/block_id"
		case b.Type == "section" && b.Text != nil && utf8.RuneCountInString(b.Text.Text) > MaxSectionTextLength:
			return fmt.Sprintf("must be less than %d characters", MaxSectionTextLength+1), at + "/text/text"
		case b.Type == "header" && (b.Text == nil || b.Text.Type != "plain_text" || utf8.RuneCountInString(b.Text.Text) > MaxHeaderText):
			return fmt.Sprintf("must be plain_text of less than %d characters", MaxHeaderText+1), at + "/text"
		case b.Type == "input" && b.Element == nil:
			return "missing required field: element", at
		}
		ids[b.BlockID] = b.BlockID != ""
		elems := append([]wireElement(nil), b.Elems...)
		for _, e := range []*wireElement{b.Element, b.Access} {
			if e != nil {
				elems = append(elems, *e)
			}
		}
		actions := map[string]bool{}
		for j, e := range elems {
			switch {
			case utf8.RuneCountInString(e.ActionID) > MaxActionID:
				return fmt.Sprintf("must be less than %d characters", MaxActionID+1), fmt.Sprintf("%s/elements/%d/action_id", at, j)
			case e.ActionID != "" && actions[e.ActionID]:
				return "duplicate action_id: " + e.ActionID, fmt.Sprintf("%s/elements/%d/action_id", at, j)
			case e.Type == "button" && utf8.RuneCountInString(e.Value) > MaxButtonValue:
				return fmt.Sprintf("must be less than %d characters", MaxButtonValue+1), fmt.Sprintf("%s/elements/%d/value", at, j)
			}
			actions[e.ActionID] = e.ActionID != ""
		}
	}
	return "", ""
}

func mustField(obj, field string) []byte {
	var m map[string]json.RawMessage
	_ = json.Unmarshal([]byte(obj), &m)
	if m[field] == nil {
		return []byte("null")
	}
	return m[field]
}

func invalidArguments(msg, ptr string) apiResult {
	return apiResult{status: 200, body: map[string]any{"ok": false, "error": "invalid_arguments",
		"response_metadata": map[string]any{"messages": []string{"[ERROR] " + msg + " [json-pointer:" + ptr + "]"}}}}
}

// Views returns the successful views.publish calls for user ("" for all),
// in order.
func (s *Server) Views(user string) []View {
	return faketest.Locked(&s.mu, func() []View { return s.viewsLocked(user) })
}

func (s *Server) viewsLocked(user string) []View {
	return faketest.Select(s.views, func(v View) bool { return user == "" || v.UserID == user }, View.clone)
}

// WaitViews waits until at least n views were published for user ("" for
// anyone) and returns them all.
func (s *Server) WaitViews(user string, n int, timeout time.Duration) ([]View, error) {
	return waitRecords(s, n, timeout, "views of "+user, func() int { return len(s.viewsLocked(user)) },
		func() []View { return s.Views(user) })
}

// AppHomeOpened sends the app_home_opened event Slack sends when user opens
// the app's tab ("home" or "messages"), as EventsAPI does.
func (s *Server) AppHomeOpened(user, tab string) Envelope {
	return s.EventsAPI(map[string]any{"type": "app_home_opened", "user": user, "channel": "D0" + user,
		"tab": tab, "event_ts": s.NextTS()})
}

// HomeAction is a press in a user's App Home tab: a button (Value its
// value) or the search box (Type "plain_text_input", Value what was typed).
type HomeAction struct {
	Team, User string // who pressed; Team defaults to Options.TeamID
	// View is the view pressed in (its PrivateMetadata and CallbackID are
	// sent back, as Slack does).
	View     View
	ActionID string
	BlockID  string
	Type     string // "button" when empty
	Value    string
}

// PressHome sends the block_actions envelope of a press in a Home tab:
// {"type":"block_actions","user":{…},"team":{…},"container":{"type":"view",
// "view_id":…},"view":{"type":"home","private_metadata":…},"actions":[…]},
// without a response_url (views have none).
func (s *Server) PressHome(a HomeAction) Envelope {
	if a.Team == "" {
		a.Team = s.opts.TeamID
	}
	if a.Type == "" {
		a.Type = "button"
	}
	s.mu.Lock()
	n := s.nextIDLocked()
	s.mu.Unlock()
	viewID := fmt.Sprintf("V%08X", n)
	action := map[string]any{"action_id": a.ActionID, "block_id": a.BlockID, "type": a.Type, "value": a.Value, "action_ts": s.NextTS()}
	if a.Type == "button" {
		action["text"] = map[string]any{"type": "plain_text", "text": "button"}
	}
	payload, _ := json.Marshal(map[string]any{
		"type":       "block_actions",
		"user":       map[string]any{"id": a.User, "team_id": a.Team, "username": "u"},
		"team":       map[string]any{"id": a.Team, "domain": s.opts.TeamName},
		"api_app_id": s.opts.AppID,
		"token":      s.opts.VerificationToken,
		"trigger_id": fmt.Sprintf("%d.%d.%s", n, 1700000000+n, faketest.RandomHex(16)),
		"container":  map[string]any{"type": "view", "view_id": viewID},
		"view": map[string]any{"id": viewID, "team_id": a.Team, "type": "home", "blocks": json.RawMessage(cmpRaw(a.View.Blocks)),
			"private_metadata": a.View.PrivateMetadata, "callback_id": a.View.CallbackID, "app_id": s.opts.AppID},
		"actions": []map[string]any{action},
	})
	return s.Push(Envelope{Type: "interactive", Payload: payload})
}

func cmpRaw(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return json.RawMessage("[]")
	}
	return b
}
