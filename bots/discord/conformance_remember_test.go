package discord

import (
	"github.com/bwmarrin/discordgo"

	"github.com/mnemo-agent/mnemo/bots/internal/conformance"
)

// Remember uses the Remember this message command as alice, on her own
// message or bob's, in the guild channel or her DM.
func (b *discordBot) Remember(text string, own, inChannel bool) conformance.Kept {
	author, channel, guild := alice, dmID, ""
	if !own {
		author = bob
	}
	if inChannel {
		channel, guild = channelID, guildID
	}
	target := b.hs.srv.AddMessage(discordgo.Message{ChannelID: channel, GuildID: guild, Author: &author, Content: text})
	n := len(b.hs.srv.WebhookEdits()) + 1
	in := ""
	if inChannel {
		in = channelID
	}
	_, edit := b.hs.answer(b.t, b.hs.rememberIn(alice, in, target), n)
	ids := buttons(edit)
	undo := func(u discordgo.User) func() string {
		return func() string {
			if len(ids) != 1 {
				b.t.Fatalf("no Undo button: %v", ids)
			}
			m := len(b.hs.srv.WebhookEdits()) + 1
			b.hs.press(u, edit, ids[0])
			es, err := b.hs.srv.WaitWebhookEdits(m, wait)
			if err != nil {
				b.t.Fatal(err)
			}
			if e := es[m-1]; e.Method == "POST" {
				return e.Message.Content
			} else if e.Edit.Content != nil {
				return *e.Edit.Content
			}
			return ""
		}
	}
	text = ""
	if edit.Edit.Content != nil {
		text = *edit.Edit.Content
	}
	return conformance.Kept{Text: text, Undo: undo(alice), UndoOther: undo(bob)}
}

var _ conformance.Keeping = (*discordBot)(nil)
