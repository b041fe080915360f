package discordtest_test

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/mnemo-agent/mnemo/bots/discord/discordtest"
)

// clock is a settable Options.Now that stands still unless advanced: an
// interaction's 3-second window is the server's time, and on a loaded
// machine (the race detector, other test binaries) a few REST calls can
// take longer than that in wall time, answering 10062 to a callback the
// test made on time.
type clock struct {
	start  time.Time
	offset atomic.Int64
}

func newClock() *clock                   { return &clock{start: time.Now()} }
func (c *clock) now() time.Time          { return c.start.Add(time.Duration(c.offset.Load())) }
func (c *clock) advance(d time.Duration) { c.offset.Add(int64(d)) }

func askInteraction() discordgo.Interaction {
	return discordgo.Interaction{GuildID: guildID, ChannelID: channelID, User: &discordgo.User{ID: userID},
		Data: discordgo.ApplicationCommandInteractionData{ID: "600", Name: "ask",
			Options: []*discordgo.ApplicationCommandInteractionDataOption{
				{Name: "question", Type: discordgo.ApplicationCommandOptionString, Value: "why?"}}}}
}

// waitWritten waits until the INTERACTION_CREATE of id was written.
func waitWritten(t *testing.T, srv *discordtest.Server, id string) {
	t.Helper()
	for n := 1; ; n++ {
		evs, err := srv.WaitEvents(n, wait)
		if err != nil {
			t.Fatal(err)
		}
		if e := evs[n-1]; e.Type == "INTERACTION_CREATE" && strings.Contains(string(e.Data), `"id":"`+id+`"`) {
			return
		}
	}
}

func TestInteractionDeferEditFollowup(t *testing.T) {
	t.Parallel()
	srv, c := connect(t, discordtest.Options{Now: newClock().now})
	sent := srv.InteractionCreate(askInteraction())
	if sent.ID == "" || sent.Token == "" || sent.AppID != discordtest.DefaultBotID || sent.Version != 1 ||
		sent.Member == nil || sent.User != nil {
		t.Fatalf("sent %+v", sent)
	}
	got := c.waitInteractions(1)[0].Interaction
	if got.ID != sent.ID || got.Token != sent.Token || got.AppID != sent.AppID || got.Type != discordgo.InteractionApplicationCommand ||
		got.Member == nil || got.Member.User == nil || got.Member.User.Username != "alice" || got.GuildID != guildID ||
		got.ApplicationCommandData().Name != "ask" || got.ApplicationCommandData().Options[0].StringValue() != "why?" {
		t.Fatalf("got %+v", got)
	}

	if err := c.dg.InteractionRespond(got, &discordgo.InteractionResponse{
		Type: discordgo.InteractionResponseDeferredChannelMessageWithSource}); err != nil {
		t.Fatal(err)
	}
	err := c.dg.InteractionRespond(got, &discordgo.InteractionResponse{Type: discordgo.InteractionResponseChannelMessageWithSource,
		Data: &discordgo.InteractionResponseData{Content: "twice"}})
	if code, status := restCode(t, err); code != 40060 || status != 400 {
		t.Fatalf("second callback: %v", err)
	}
	resps, err := srv.WaitInteractionResponses(1, wait)
	if err != nil || resps[0].InteractionID != sent.ID || resps[0].Token != sent.Token ||
		resps[0].Response.Type != discordgo.InteractionResponseDeferredChannelMessageWithSource ||
		resps[0].Latency < 0 || resps[0].Latency > discordtest.DefaultInteractionWindow {
		t.Fatalf("responses %+v, %v", resps, err)
	}

	// The deferred response is a "thinking" message, like on Discord.
	thinking := c.waitMessages(1)[0]
	if thinking.Flags&discordgo.MessageFlagsLoading == 0 || thinking.Author.ID != discordtest.DefaultBotID ||
		thinking.InteractionMetadata == nil || thinking.InteractionMetadata.ID != sent.ID ||
		thinking.Type != discordgo.MessageTypeChatInputCommand {
		t.Fatalf("thinking %+v", thinking.Message)
	}
	content := "because"
	edited, err := c.dg.InteractionResponseEdit(got, &discordgo.WebhookEdit{Content: &content,
		Components: &[]discordgo.MessageComponent{discordgo.ActionsRow{Components: []discordgo.MessageComponent{
			discordgo.Button{Label: "Again", CustomID: "again", Style: discordgo.SecondaryButton}}}}})
	if err != nil || edited.Content != "because" || edited.ID != thinking.ID || edited.Flags&discordgo.MessageFlagsLoading != 0 ||
		len(edited.Components) != 1 {
		t.Fatalf("edited %+v, %v", edited, err)
	}
	original, err := c.dg.InteractionResponse(got)
	if err != nil || original.Content != "because" {
		t.Fatalf("original %+v, %v", original, err)
	}
	follow, err := c.dg.FollowupMessageCreate(got, true, &discordgo.WebhookParams{Content: "more",
		Embeds: []*discordgo.MessageEmbed{{Title: "t"}}})
	if err != nil || follow.Content != "more" || follow.WebhookID != discordtest.DefaultBotID {
		t.Fatalf("followup %+v, %v", follow, err)
	}
	again := "more, edited"
	if m, err := c.dg.FollowupMessageEdit(got, follow.ID, &discordgo.WebhookEdit{Content: &again}); err != nil ||
		m.Content != again || m.EditedTimestamp == nil {
		t.Fatalf("followup edit %+v, %v", m, err)
	}
	if _, err := c.dg.FollowupMessageEdit(got, "1", &discordgo.WebhookEdit{Content: &again}); err == nil {
		t.Fatal("edited an unknown followup")
	}
	secret, err := c.dg.FollowupMessageCreate(got, true, &discordgo.WebhookParams{Content: "psst",
		Flags: discordgo.MessageFlagsEphemeral})
	if err != nil || secret.Flags&discordgo.MessageFlagsEphemeral == 0 {
		t.Fatalf("ephemeral %+v, %v", secret, err)
	}

	edits, err := srv.WaitWebhookEdits(4, wait)
	if err != nil {
		t.Fatal(err)
	}
	if e := edits[0]; e.Method != "PATCH" || e.MessageID != "@original" || e.Edit.Content == nil || *e.Edit.Content != "because" ||
		e.Edit.Components == nil || len(*e.Edit.Components) != 1 || e.Token != sent.Token || e.ApplicationID != sent.AppID ||
		e.Message.ID != thinking.ID {
		t.Fatalf("edit %+v", e)
	}
	if e := edits[1]; e.Method != "POST" || e.MessageID != follow.ID || *e.Edit.Content != "more" || e.Edit.Embeds == nil {
		t.Fatalf("followup record %+v", e)
	}
	hist := srv.Messages(channelID)
	if len(hist) != 2 || hist[0].Content != "because" || hist[1].Content != "more, edited" {
		t.Fatalf("history %+v", hist)
	}
	if seqs := []int{resps[0].Seq, edits[0].Seq, edits[1].Seq}; !(seqs[0] < seqs[1] && seqs[1] < seqs[2]) {
		t.Fatalf("record order %v", seqs)
	}
}

func TestInteractionImmediateResponse(t *testing.T) {
	t.Parallel()
	srv, c := connect(t, discordtest.Options{Now: newClock().now})
	dm := srv.InteractionCreate(discordgo.Interaction{ChannelID: dmID, User: &discordgo.User{ID: userID},
		Data: discordgo.ApplicationCommandInteractionData{Name: "ask"}})
	got := c.waitInteractions(1)[0].Interaction
	if got.User == nil || got.User.ID != userID || got.Member != nil || dm.Member != nil {
		t.Fatalf("dm interaction %+v", got)
	}
	err := c.dg.InteractionRespond(got, &discordgo.InteractionResponse{Type: discordgo.InteractionResponseChannelMessageWithSource,
		Data: &discordgo.InteractionResponseData{}})
	if code, _ := restCode(t, err); code != 50006 {
		t.Fatalf("empty response: %v", err)
	}
	err = c.dg.InteractionRespond(got, &discordgo.InteractionResponse{Type: discordgo.InteractionResponseUpdateMessage,
		Data: &discordgo.InteractionResponseData{Content: "x"}})
	if code, _ := restCode(t, err); code != 50035 {
		t.Fatalf("update for a command: %v", err)
	}
	if err := c.dg.InteractionRespond(got, &discordgo.InteractionResponse{Type: discordgo.InteractionResponseChannelMessageWithSource,
		Data: &discordgo.InteractionResponseData{Content: "hi <@" + userID + ">"}}); err != nil {
		t.Fatal(err)
	}
	m := c.waitMessages(1)[0]
	if m.Content != "hi <@"+userID+">" || m.ChannelID != dmID || len(m.Mentions) != 1 {
		t.Fatalf("response message %+v", m.Message)
	}

	// A button on that message: the bot updates it in place.
	click := srv.InteractionCreate(discordgo.Interaction{Type: discordgo.InteractionMessageComponent, ChannelID: dmID,
		Member: &discordgo.Member{User: &discordgo.User{ID: userID}}, Message: m.Message,
		Data: discordgo.MessageComponentInteractionData{CustomID: "again", ComponentType: discordgo.ButtonComponent}})
	if click.User == nil || click.Member != nil {
		t.Fatalf("dm click %+v", click)
	}
	gotClick := c.waitInteractions(2)[1].Interaction
	if gotClick.MessageComponentData().CustomID != "again" || gotClick.Message == nil || gotClick.Message.ID != m.ID {
		t.Fatalf("click %+v", gotClick)
	}
	if err := c.dg.InteractionRespond(gotClick, &discordgo.InteractionResponse{Type: discordgo.InteractionResponseUpdateMessage,
		Data: &discordgo.InteractionResponseData{Content: "updated"}}); err != nil {
		t.Fatal(err)
	}
	if hist := srv.Messages(dmID); len(hist) != 1 || hist[0].Content != "updated" || hist[0].EditedTimestamp == nil {
		t.Fatalf("history %+v", hist)
	}
	ping := srv.InteractionCreate(discordgo.Interaction{Type: discordgo.InteractionPing})
	if err := c.dg.InteractionRespond(&ping, &discordgo.InteractionResponse{Type: discordgo.InteractionResponsePong}); err != nil {
		t.Fatal(err)
	}
	if n := len(srv.InteractionResponses()); n != 3 {
		t.Fatalf("%d responses", n)
	}
}

func TestInteractionWindowAndTokenLifetime(t *testing.T) {
	t.Parallel()
	clk := newClock()
	srv, c := connect(t, discordtest.Options{Now: clk.now})

	late := srv.InteractionCreate(askInteraction())
	waitWritten(t, srv, late.ID)
	clk.advance(3*time.Second + time.Millisecond)
	err := c.dg.InteractionRespond(&late, &discordgo.InteractionResponse{Type: discordgo.InteractionResponseDeferredChannelMessageWithSource})
	if code, status := restCode(t, err); code != 10062 || status != 404 {
		t.Fatalf("late callback: %v", err)
	}
	// The token of an interaction never answered in time is dead too.
	content := "too late"
	_, err = c.dg.InteractionResponseEdit(&late, &discordgo.WebhookEdit{Content: &content})
	if code, _ := restCode(t, err); code != 10015 {
		t.Fatalf("late edit: %v", err)
	}

	onTime := srv.InteractionCreate(askInteraction())
	waitWritten(t, srv, onTime.ID)
	clk.advance(2 * time.Second)
	if err := c.dg.InteractionRespond(&onTime, &discordgo.InteractionResponse{
		Type: discordgo.InteractionResponseDeferredChannelMessageWithSource}); err != nil {
		t.Fatal(err)
	}
	if r := srv.InteractionResponses(); len(r) != 1 || r[0].Latency < 2*time.Second {
		t.Fatalf("responses %+v", r)
	}
	clk.advance(10 * time.Minute)
	if _, err := c.dg.InteractionResponseEdit(&onTime, &discordgo.WebhookEdit{Content: &content}); err != nil {
		t.Fatalf("edit within 15 minutes: %v", err)
	}
	clk.advance(5 * time.Minute)
	_, err = c.dg.InteractionResponseEdit(&onTime, &discordgo.WebhookEdit{Content: &content})
	if code, status := restCode(t, err); code != 50027 || status != 401 {
		t.Fatalf("expired token: %v", err)
	}
	_, err = c.dg.FollowupMessageCreate(&onTime, true, &discordgo.WebhookParams{Content: "x"})
	if code, _ := restCode(t, err); code != 50027 {
		t.Fatalf("expired followup: %v", err)
	}

	unknown := discordgo.Interaction{ID: "1", Token: "nope", AppID: discordtest.DefaultBotID}
	err = c.dg.InteractionRespond(&unknown, &discordgo.InteractionResponse{Type: discordgo.InteractionResponsePong})
	if code, _ := restCode(t, err); code != 10062 {
		t.Fatalf("unknown interaction: %v", err)
	}
	_, err = c.dg.InteractionResponseEdit(&unknown, &discordgo.WebhookEdit{Content: &content})
	if code, _ := restCode(t, err); code != 10015 {
		t.Fatalf("unknown webhook: %v", err)
	}
	var re *discordgo.RESTError
	if !errors.As(err, &re) {
		t.Fatal("not a RESTError")
	}
}

func TestInteractionVariants(t *testing.T) {
	t.Parallel()
	srv := discordtest.New(t, discordtest.Options{Now: newClock().now})
	cb := func(i discordgo.Interaction, body string) answer {
		return do(t, srv, "POST", "/api/v9/interactions/"+i.ID+"/"+i.Token+"/callback", body, bot)
	}
	auto := srv.InteractionCreate(discordgo.Interaction{Type: discordgo.InteractionApplicationCommandAutocomplete,
		ChannelID: "31", User: &discordgo.User{ID: userID}})
	if a := cb(auto, `{"type":9,"data":{"custom_id":"m","title":"t"}}`); a.status != 400 {
		t.Fatalf("modal for autocomplete: %d", a.status)
	}
	if a := cb(auto, `{"type":8,"data":{"choices":[{"name":"a","value":"a"}]}}`); a.status != 204 {
		t.Fatalf("autocomplete: %d %s", a.status, a.raw)
	}
	modal := srv.InteractionCreate(discordgo.Interaction{GuildID: guildID, ChannelID: "32",
		Member: &discordgo.Member{User: &discordgo.User{ID: userID}, Nick: "al"}})
	if modal.Member.Nick != "al" || modal.User != nil {
		t.Fatalf("member %+v", modal)
	}
	if a := cb(modal, `{"type":9,"data":{"custom_id":"m","title":"t","components":[{"type":1,"components":[{"type":4,"custom_id":"q","label":"Q","style":1}]}]}}`); a.status != 204 {
		t.Fatalf("modal: %d %s", a.status, a.raw)
	}
	// A modal submit answered with a message in a channel the server had
	// not seen: the channel appears.
	submit := srv.InteractionCreate(discordgo.Interaction{Type: discordgo.InteractionModalSubmit, ChannelID: "33",
		User: &discordgo.User{ID: userID}})
	if a := cb(submit, `{"type":4,"data":{"content":"thanks","allowed_mentions":{"parse":[],"users":["`+userID+`"]}}}`); a.status != 204 {
		t.Fatalf("submit: %d %s", a.status, a.raw)
	}
	if hist := srv.Messages("33"); len(hist) != 1 || hist[0].Content != "thanks" {
		t.Fatalf("history %+v", hist)
	}
	if a := do(t, srv, "GET", "/api/v9/channels/33", "", bot); a.status != 200 || a.body["type"] != 1.0 {
		t.Fatalf("channel %d %s", a.status, a.raw)
	}
	guildSubmit := srv.InteractionCreate(discordgo.Interaction{Type: discordgo.InteractionModalSubmit, ChannelID: "34",
		GuildID: guildID, User: &discordgo.User{ID: userID}})
	if a := cb(guildSubmit, `{"type":6}`); a.status != 204 {
		t.Fatalf("deferred update: %d %s", a.status, a.raw)
	}
	if a := cb(guildSubmit, `{"type":1}`); a.code() != 40060 {
		t.Fatalf("second: %s", a.raw)
	}
	hook := "/api/v9/webhooks/" + submit.AppID + "/" + submit.Token
	follow := do(t, srv, "POST", hook, `{"content":"f <@`+userID+`>","allowed_mentions":{"parse":[],"users":["`+userID+`"]}}`, "")
	id, _ := follow.body["id"].(string)
	if got := do(t, srv, "GET", hook+"/messages/"+id, "", ""); got.status != 200 || got.body["content"] != "f <@"+userID+">" {
		t.Fatalf("followup %d %s", got.status, got.raw)
	}
	if a := cb(discordgo.Interaction{ID: "1", Token: "x"}, `{"type":1}`); a.code() != 10062 {
		t.Fatalf("unknown: %s", a.raw)
	}
}
