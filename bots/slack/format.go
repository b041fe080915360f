package slack

import (
	"strings"

	"github.com/mnemo-agent/mnemo/agent/text"
	"github.com/mnemo-agent/mnemo/bots/internal/markdown"
	"github.com/mnemo-agent/mnemo/bots/internal/split"
)

// maxPartRunes is the length (in characters) past which a reply is split
// into several messages. Slack refuses text over 40,000 characters and
// collapses long messages; 3,500 keeps every part readable.
const maxPartRunes = 3500

// fence is the only form of code fence toMrkdwn emits: a line of its own.
const fence = markdown.Fence

// formatReply converts the model's Markdown to Slack mrkdwn and splits it
// into messages of at most maxPartRunes characters, in order (split.Text:
// toMrkdwn's fences are bare "```" lines, and no other line holds ```).
func formatReply(md string) []string {
	return split.Text(toMrkdwn(md), maxPartRunes)
}

// toMrkdwn converts Markdown to Slack mrkdwn (markdown.Slack): **bold**
// and __bold__ → *bold*, *italic* → _italic_, ~~strike~~ → ~strike~,
// [text](url) → <url|text>, headings → a bold line, bullets → "• ". Code
// spans and blocks keep their content. &, < and > are escaped everywhere
// as Slack requires, so the text cannot contain Slack's own <!here>-style
// control sequences, and @here/@channel/@everyone get a zero-width space.
func toMrkdwn(md string) string { return markdown.Slack(md) }

// slackTokenRE matches Slack's <…> sequences in message text.
var slackTokenRE = text.NewRegexp(`<([^<>\n]*)>`)

var textUnescaper = strings.NewReplacer("&lt;", "<", "&gt;", ">", "&amp;", "&")

// plainText turns Slack message markup into plain text for the model:
// <@U…> becomes @name or @U…, <#C…|name> #name, <!here> @here, <url|label>
// "label (url)", and &amp; &lt; &gt; their characters. A mention of the bot
// (botUserID) is dropped when stripBot, else written @botName.
func plainText(s, botUserID, botName string, stripBot bool) string {
	s = slackTokenRE.Get().ReplaceAllStringFunc(s, func(tok string) string {
		target, label, _ := strings.Cut(tok[1:len(tok)-1], "|")
		switch {
		case strings.HasPrefix(target, "@"):
			id := target[1:]
			switch {
			case id == botUserID && stripBot:
				return ""
			case id == botUserID:
				return "@" + botName
			case label != "":
				return "@" + strings.TrimPrefix(label, "@")
			}
			return target
		case strings.HasPrefix(target, "#"):
			if label != "" {
				return "#" + label
			}
			return target
		case strings.HasPrefix(target, "!"):
			if label != "" { // <!subteam^S…|@team>, <!date^…|fallback>
				return label
			}
			switch name := target[1:]; name {
			case "here", "channel", "everyone":
				return "@" + name
			default:
				return name
			}
		}
		addr := strings.TrimPrefix(target, "mailto:")
		if label == "" || label == target || label == addr {
			return addr
		}
		return label + " (" + target + ")"
	})
	return strings.TrimSpace(textUnescaper.Replace(s))
}
