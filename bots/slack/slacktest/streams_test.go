package slacktest

import (
	"strings"
	"testing"
	"time"

	"github.com/slack-go/slack"
)

// chat.startStream starts a reply in a thread (its recipient named outside
// a DM), appendStream adds to it, stopStream ends it (keeping metadata);
// a message streaming cannot be updated, a stopped one cannot be
// appended to, and RefuseStreams refuses every start.
func TestStreams(t *testing.T) {
	srv, api := newServer(t, Options{})
	md := slack.MsgOptionMarkdownText
	if _, _, err := api.StartStream("C1", md("x")); err == nil || err.Error() != "invalid_thread_ts" {
		t.Fatalf("no thread: %v", err)
	}
	if _, _, err := api.StartStream("C1", slack.MsgOptionTS("1.1"), md("x")); err == nil || err.Error() != "invalid_arguments" {
		t.Fatalf("no recipient: %v", err)
	}
	if _, _, err := api.StartStream("D1", slack.MsgOptionTS("1.1"), md(strings.Repeat("x", MaxStreamText+1))); err == nil || err.Error() != "msg_too_long" {
		t.Fatalf("too long: %v", err)
	}
	if _, _, err := api.StartStream("", slack.MsgOptionTS("1.1")); err == nil || err.Error() != "channel_not_found" {
		t.Fatalf("no channel: %v", err)
	}
	_, ts, err := api.StartStream("C1", slack.MsgOptionTS("1.1"), md("Hello"),
		slack.MsgOptionRecipientUserID("U1"), slack.MsgOptionRecipientTeamID("T1"))
	if err != nil || ts == "" || !srv.Streaming("C1", ts) {
		t.Fatalf("start: %q %v", ts, err)
	}
	if _, _, _, err := api.UpdateMessage("C1", ts, slack.MsgOptionText("no", false)); err == nil || err.Error() != "cant_update_message" {
		t.Fatalf("update while streaming: %v", err)
	}
	if _, _, err := api.AppendStream("C1", ts); err == nil || err.Error() != "no_text" {
		t.Fatalf("empty append: %v", err)
	}
	if _, _, err := api.AppendStream("C1", ts, md(strings.Repeat("x", MaxStreamText+1))); err == nil || err.Error() != "msg_too_long" {
		t.Fatalf("long append: %v", err)
	}
	if _, _, err := api.AppendStream("C1", ts, md(", world")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := api.StopStream("C1", ts, slack.MsgOptionMetadata(slack.SlackMetadata{EventType: "e", EventPayload: map[string]any{"a": 1}})); err != nil {
		t.Fatal(err)
	}
	if srv.Streaming("C1", ts) {
		t.Error("still streaming")
	}
	if _, _, err := api.AppendStream("C1", ts, md("!")); err == nil || err.Error() != "message_not_in_streaming_state" {
		t.Fatalf("append after stop: %v", err)
	}
	if _, _, err := api.AppendStream("C1", "9.9", md("!")); err == nil || err.Error() != "message_not_found" {
		t.Fatalf("append to nothing: %v", err)
	}
	var methods, texts []string
	for _, p := range srv.Chat("") {
		methods, texts = append(methods, p.Method), append(texts, p.Text)
	}
	if strings.Join(methods, " ") != "chat.startStream chat.appendStream chat.stopStream" ||
		strings.Join(texts, "|") != "Hello|Hello, world|Hello, world" {
		t.Errorf("records %q %q", methods, texts)
	}
	h, _, _, err := api.GetConversationReplies(&slack.GetConversationRepliesParameters{ChannelID: "C1", Timestamp: "1.1", IncludeAllMetadata: true})
	if err != nil || len(h) != 1 || h[0].Text != "Hello, world" || h[0].Metadata.EventType != "e" {
		t.Errorf("messages %+v, %v", h, err)
	}
	if _, _, _, err := api.UpdateMessage("C1", ts, slack.MsgOptionText("done", false)); err != nil {
		t.Fatalf("update after stop: %v", err)
	}
	_, pts, _ := api.PostMessage("D1", slack.MsgOptionText("posted", false))
	api.UpdateMessage("D1", pts, slack.MsgOptionText("edited", false))
	_, dts, _ := api.PostMessage("D1", slack.MsgOptionText("gone", false))
	api.DeleteMessage("D1", dts)
	rs, err := srv.WaitReplies(3, time.Second)
	if err != nil || len(rs) != 3 || rs[0].Method != "chat.startStream" || rs[0].Text != "done" || rs[1].Text != "edited" || rs[2].Text != "" {
		t.Errorf("replies %+v, %v", rs, err)
	}
	_, sts, _ := api.StartStream("D1", slack.MsgOptionTS("1.1"), md("x"))
	if _, err := srv.WaitReplies(4, 50*time.Millisecond); err == nil {
		t.Error("a running stream counted as a finished reply")
	}
	api.StopStream("D1", sts)
	if rs, err := srv.WaitReplies(4, time.Second); err != nil || rs[3].Text != "x" {
		t.Errorf("replies %+v, %v", rs, err)
	}
	srv.RefuseStreams("not_allowed_token_type")
	if _, _, err := api.StartStream("D1", slack.MsgOptionTS("1.1"), md("x")); err == nil || err.Error() != "not_allowed_token_type" {
		t.Fatalf("refused: %v", err)
	}
}
