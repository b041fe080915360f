package discord

import (
	"cmp"
	"context"
	"log/slog"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/bwmarrin/discordgo"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/agent/text"
	"github.com/mnemo-agent/mnemo/bots/access"
	"github.com/mnemo-agent/mnemo/bots/internal/clean"
	"github.com/mnemo-agent/mnemo/bots/internal/markdown"
	"github.com/mnemo-agent/mnemo/bots/internal/pipeline"
	"github.com/mnemo-agent/mnemo/bots/internal/split"
	"github.com/mnemo-agent/mnemo/bots/internal/thread"
)

// incoming is a message the bot will answer.
type incoming struct {
	pipeline.Message // ID is "msg:" + the message id
	msg              *discordgo.Message
	thread           bool // written in a thread channel
}

// onMessage filters a MESSAGE_CREATE and hands it to the pipeline, which
// journals it (fsynced: Discord delivers a message once, so it must
// survive a crash from here on) and queues the answer. It runs on
// discordgo's event goroutine, in gateway order: everything that talks to
// Discord happens in the queued work.
func (b *Bot) onMessage(_ *discordgo.Session, e *discordgo.MessageCreate) {
	m := e.Message
	if m == nil {
		return
	}
	b.recent.put(m)
	botID, botName, _ := b.self()
	log := b.log.With("message_id", m.ID, "channel", m.ChannelID, "guild", m.GuildID)
	in, why := b.accept(m, botID, botName)
	if in == nil {
		log.Debug("discord: message ignored", "reason", why)
		return
	}
	in.ID = "msg:" + m.ID
	in.Log = log.With("memory_user", in.User, "platform", "discord", "user", m.Author.ID)
	if b.memoryMention(m, in, botID) {
		return // answered by DM, never journaled
	}
	if !b.pipe.Admit(context.Background(), in) {
		return // refused: never journaled
	}
	b.pipe.Receive(context.Background(), in)
}

// accept decides whether a message is one to answer.
func (b *Bot) accept(m *discordgo.Message, botID, botName string) (*incoming, string) {
	switch {
	case m.Author == nil || m.Author.ID == "":
		return nil, "no author"
	case m.Author.ID == botID:
		return nil, "from the bot itself"
	case m.Author.Bot || m.Author.System:
		return nil, "from a bot"
	case m.WebhookID != "":
		return nil, "from a webhook"
	case m.Type != discordgo.MessageTypeDefault && m.Type != discordgo.MessageTypeReply:
		return nil, "not a user message"
	case !snowflake(m.Author.ID) || !snowflake(m.ChannelID) || !snowflake(m.ID) || (m.GuildID != "" && !snowflake(m.GuildID)):
		return nil, "malformed ids"
	}
	dm := m.GuildID == ""
	if !dm && !mentions(m, botID) && !(m.ReferencedMessage != nil && m.ReferencedMessage.Author != nil && m.ReferencedMessage.Author.ID == botID) {
		return nil, "neither a mention of the bot nor a reply to it"
	}
	in := &incoming{msg: m, Message: pipeline.Message{
		DM:      dm,
		User:    b.memoryUser(m.Author.ID),
		Speaker: displayName(m.Author, m.Member),
	}}
	in.Who = who(m.GuildID, m.ChannelID, m.Author.ID, m.Member)
	in.Text, in.Cut = cutIncoming(m, botID, botName)
	if dm {
		in.Conversation = "discord:dm:" + m.ChannelID
	} else {
		// Until Prepare knows whether the channel is a thread: one person's
		// mentions in one channel are answered in order.
		in.Conversation = "discord:" + m.GuildID + ":" + m.ChannelID + ":" + m.Author.ID
	}
	return in, ""
}

// who is the author of a message or command for the access check: the
// guild and channel it was written in, and their roles there (from the
// member the event carries; none in a DM).
func who(guild, channel, user string, member *discordgo.Member) access.Who {
	w := access.Who{Platform: access.Discord, Team: guild, Channel: channel, User: user}
	if member != nil && guild != "" {
		w.Roles = member.Roles
	}
	return w
}

func mentions(m *discordgo.Message, id string) bool {
	for _, u := range m.Mentions {
		if u != nil && u.ID == id {
			return true
		}
	}
	return false
}

// displayName is what a person is called: the guild nickname, the
// display name, else the user name, neutralised for a prompt.
func displayName(u *discordgo.User, member *discordgo.Member) string {
	nick := ""
	if member != nil {
		nick = member.Nick
	}
	if u == nil {
		return clean.Name(nick)
	}
	return clean.Name(cmp.Or(nick, u.GlobalName, u.Username))
}

// replyParts renders the model's Markdown as Discord shows it (cleaned of
// control and invisible characters) and splits it into at most maxParts
// messages of at most maxMessageRunes characters.
func replyParts(text string) []string {
	parts := split.Text(markdown.Discord(text), maxMessageRunes)
	if len(parts) == 0 { // nothing to show (blank, or only empty code blocks)
		parts = []string{mnemo.ApologyText}
	}
	if len(parts) > maxParts {
		parts = parts[:maxParts]
		last := []rune(parts[maxParts-1])
		room := maxMessageRunes - utf8.RuneCountInString(cutNote) - 4
		if len(last) > room {
			last = last[:room]
		}
		s := string(last)
		if strings.Count(s, "```")%2 == 1 {
			s += "\n```"
		}
		parts[maxParts-1] = s + cutNote
	}
	return parts
}

// tokenRE matches Discord's <…> markup: users, roles, channels, emoji,
// timestamps.
var tokenRE = text.NewRegexp(`<(@!?|@&|#|a?:[A-Za-z0-9_~]+:|t:)([0-9]+)(?::[tTdDfFR])?>`)

// MaxIncomingChars is the longest text of a message read (Discord's own
// limit, with Nitro): a longer one is cut there before it is journaled,
// and its author told.
const MaxIncomingChars = 4000

// cutIncoming is m's text for the model, cut at MaxIncomingChars, and
// MaxIncomingChars when it was cut (else 0). The raw content is cut
// first, so that a huge message costs no more to read than a long one, and
// again after plainText (which may lengthen a mention).
func cutIncoming(m *discordgo.Message, botID, botName string) (string, int) {
	raw, cut1 := pipeline.CutIncoming(m.Content, MaxIncomingChars)
	short := *m
	short.Content = raw
	out, cut2 := pipeline.CutIncoming(plainText(&short, botID, botName, true), MaxIncomingChars)
	if cut1 || cut2 {
		return out, MaxIncomingChars
	}
	return out, 0
}

// plainText is a message's text for the model: a mention of the bot is
// dropped when stripBot (else written @botName), other user mentions are
// written @name, roles @role, channels #channel, custom emoji :name:.
func plainText(m *discordgo.Message, botID, botName string, stripBot bool) string {
	names := map[string]string{}
	for _, u := range m.Mentions {
		if u != nil {
			names[u.ID] = cmp.Or(clean.Name(cmp.Or(u.GlobalName, u.Username)), u.ID)
		}
	}
	s := tokenRE.Get().ReplaceAllStringFunc(m.Content, func(tok string) string {
		sub := tokenRE.Get().FindStringSubmatch(tok)
		kind, id := sub[1], sub[2]
		switch {
		case kind == "@" || kind == "@!":
			if id == botID {
				if stripBot {
					return ""
				}
				return "@" + botName
			}
			if n, ok := names[id]; ok {
				return "@" + n
			}
			return "@user"
		case kind == "@&":
			return "@role"
		case kind == "#":
			return "#channel"
		case kind == "t:":
			return tok
		}
		return kind[strings.Index(kind, ":"):] // custom emoji → :name:
	})
	return strings.TrimSpace(s)
}

// context is what came before the message: the thread's last messages in
// a thread, else the chain of replies it answers.
func (b *Bot) context(ctx context.Context, in *incoming, log *slog.Logger) []mnemo.ContextMessage {
	botID, botName, _ := b.self()
	var earlier []*discordgo.Message
	switch {
	case in.thread:
		msgs, err := b.s.ChannelMessages(in.msg.ChannelID, thread.MaxMessages, in.msg.ID, "", "", discordgo.WithContext(ctx))
		if err != nil {
			log.Info("discord: cannot read the thread; answering without its earlier messages", "error", err)
			break
		}
		for i := len(msgs) - 1; i >= 0; i-- { // Discord answers newest first
			earlier = append(earlier, msgs[i])
		}
	case in.msg.MessageReference != nil:
		earlier = b.replyChain(ctx, in.msg, log)
	}
	tm := make([]thread.Message, 0, len(earlier))
	for _, m := range earlier {
		if m == nil || m.Author == nil {
			continue
		}
		tm = append(tm, thread.Message{
			AuthorID:   m.Author.ID,
			AuthorName: displayName(m.Author, m.Member),
			Bot:        m.Author.Bot,
			Self:       m.Author.ID == botID,
			Text:       plainText(m, botID, botName, false),
		})
	}
	return thread.Context(tm, in.msg.Author.ID, in.Speaker, botName, thread.MaxMessages, thread.MaxText)
}

// replyChain follows the message references from m back, at most
// thread.MaxMessages messages, from the recent-message cache or else through REST,
// and returns them oldest first.
func (b *Bot) replyChain(ctx context.Context, m *discordgo.Message, log *slog.Logger) []*discordgo.Message {
	var chain []*discordgo.Message
	cur := m
	for len(chain) < thread.MaxMessages && cur.MessageReference != nil && cur.MessageReference.MessageID != "" {
		ref := cur.MessageReference
		ch := cmp.Or(ref.ChannelID, cur.ChannelID)
		var next *discordgo.Message
		if cur.ReferencedMessage != nil && cur.ReferencedMessage.ID == ref.MessageID {
			next = cur.ReferencedMessage
		} else if next = b.recent.get(ref.MessageID); next == nil {
			got, err := b.s.ChannelMessage(ch, ref.MessageID, discordgo.WithContext(ctx))
			if err != nil {
				log.Info("discord: cannot read an earlier message of the reply chain", "message_id", ref.MessageID, "error", err)
				break
			}
			next = got
			b.recent.put(next)
		}
		chain = append(chain, next)
		cur = next
	}
	for i, j := 0, len(chain)-1; i < j; i, j = i+1, j-1 {
		chain[i], chain[j] = chain[j], chain[i]
	}
	return chain
}

// msgCache keeps the last messages seen (received and posted), so a reply
// chain is mostly walked without REST calls.
type msgCache struct {
	mu    sync.Mutex
	max   int
	m     map[string]*discordgo.Message
	order []string
}

func newMsgCache(max int) *msgCache {
	return &msgCache{max: max, m: make(map[string]*discordgo.Message)}
}

func (c *msgCache) put(m *discordgo.Message) {
	if m == nil || m.ID == "" {
		return
	}
	// Keep what a chain needs, not the referenced message's own chain.
	cp := *m
	if cp.ReferencedMessage != nil {
		rm := *cp.ReferencedMessage
		rm.ReferencedMessage = nil
		cp.ReferencedMessage = &rm
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[m.ID]; !ok {
		c.order = append(c.order, m.ID)
	}
	c.m[m.ID] = &cp
	for len(c.order) > c.max {
		delete(c.m, c.order[0])
		c.order = c.order[1:]
	}
}

func (c *msgCache) get(id string) *discordgo.Message {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[id]
}

// kindCache remembers which channels are threads, and whose memory they
// use (from the REST channel object, asked for once per channel).
type kindCache struct {
	mu     sync.Mutex
	max    int
	parent map[string]string // a thread's home (its parent, or itself when private); "" for a channel that is not a thread
	lookup func(ctx context.Context, id string) (*discordgo.Channel, error)
}

func newKindCache(max int) *kindCache {
	return &kindCache{max: max, parent: map[string]string{}}
}

// home is the channel whose memory a message in channel id belongs to: a
// public or announcement thread's parent (such a thread is part of its
// channel: everyone there can read it), else id itself. A private thread
// (type 12) is its own home: its members are invited, and what they say
// there is not for everyone in the parent channel.
func (c *kindCache) home(ctx context.Context, id string) (home string, thread bool) {
	c.mu.Lock()
	p, ok := c.parent[id]
	c.mu.Unlock()
	if !ok && c.lookup != nil {
		ch, err := c.lookup(ctx, id)
		if err != nil {
			return id, false // not cached: asked again next time
		}
		switch p = ""; {
		case ch.Type == discordgo.ChannelTypeGuildPrivateThread:
			p = id
		case ch.IsThread():
			p = cmp.Or(ch.ParentID, id)
		}
		c.mu.Lock()
		if len(c.parent) >= c.max {
			clear(c.parent)
		}
		c.parent[id] = p
		c.mu.Unlock()
	}
	if p == "" {
		return id, false
	}
	return p, true
}
