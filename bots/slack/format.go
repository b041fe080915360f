package slack

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/mnemo-agent/mnemo/bots/internal/core"
)

// maxPartRunes is the length (in characters) past which a reply is split
// into several messages. Slack refuses text over 40,000 characters and
// collapses long messages; 3,500 keeps every part readable.
const maxPartRunes = 3500

// fence is the only form of code fence formatReply emits: a line of its own.
const fence = "```"

// zwsp (zero-width space) is put after the "@" of @here, @channel and
// @everyone and between backticks, so that neither pings nor stray code
// fences survive into Slack.
const zwsp = "\u200b"

// Private-use runes used as placeholders while converting a line; input
// containing them has them replaced first.
const (
	phOpen  = '\uE000' // starts a protected span: phOpen index phClose
	phClose = '\uE001'
	phBold  = '\uE002' // a "*" of bold, so the italic rule does not see it
)

// formatReply converts the model's Markdown to Slack mrkdwn and splits it
// into messages of at most maxPartRunes characters, in order (core.Split:
// toMrkdwn's fences are bare "```" lines, and no other line holds ```).
func formatReply(md string) []string {
	return core.Split(toMrkdwn(md), maxPartRunes)
}

// outLine is one line of converted text; fence lines are exactly "```".
type outLine struct {
	text  string
	fence bool
}

var (
	// fenceRE: an opening code fence (any indentation, as inside list items)
	// with an optional info string.
	fenceRE       = regexp.MustCompile("^([ \t]*)(`{3,}|~{3,})(.*)$")
	headingRE     = regexp.MustCompile(`^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$`)
	bulletRE      = regexp.MustCompile(`^([ \t]*)[*+-][ \t]+(.*)$`)
	taskRE        = regexp.MustCompile(`^\[([ xX])\][ \t]+`)
	boldItalicRE  = regexp.MustCompile(`\*\*\*([^\s*](?:[^*]*[^\s*])?)\*\*\*`)
	boldStarRE    = regexp.MustCompile(`\*\*([^\s*](?:[^*]*?[^\s*])?)\*\*`)
	boldUnderRE   = regexp.MustCompile(`(^|[^\p{L}\p{N}_])__([^\s_](?:[^_]*?[^\s_])?)__`)
	italicStarRE  = regexp.MustCompile(`(^|[^\p{L}\p{N}*\\])\*([^\s*](?:[^*]*?[^\s*])?)\*`)
	strikeRE      = regexp.MustCompile(`~~([^\s~](?:[^~]*?[^\s~])?)~~`)
	placeholderRE = regexp.MustCompile("\uE000([0-9]+)\uE001")
	// pingRE finds the words Slack turns into channel-wide pings when they
	// are linked; a "@" inside a word (an e-mail address) is not one.
	pingRE  = regexp.MustCompile(`(?i)(^|[^\p{L}\p{N}_])@(channel|here|everyone)`)
	bareURL = regexp.MustCompile(`^(?:https?://|mailto:)[^\s<>]+`)
)

// toMrkdwn converts Markdown to Slack mrkdwn: **bold** and __bold__ →
// *bold*, *italic* → _italic_, ~~strike~~ → ~strike~, [text](url) →
// <url|text>, headings → a bold line, "* "/"- "/"+ " bullets → "• ".
// Code spans and blocks keep their content. &, < and > are escaped
// everywhere as Slack requires, so the text cannot contain Slack's own
// <!here>-style control sequences, and @here/@channel/@everyone get a
// zero-width space. Code fences come out balanced, each "```" on a line of
// its own.
func toMrkdwn(md string) string {
	md = sanitize(md)
	var out []outLine
	inCode := false
	var openMark, indent string
	for _, l := range strings.Split(md, "\n") {
		if !inCode {
			if m := fenceRE.FindStringSubmatch(l); m != nil && !(m[2][0] == '`' && strings.Contains(m[3], "`")) {
				inCode, indent, openMark = true, m[1], m[2]
				out = append(out, outLine{text: fence, fence: true})
				continue
			}
			out = append(out, outLine{text: convertLine(l)})
			continue
		}
		if closesFence(l, openMark) {
			inCode = false
			out = append(out, outLine{text: fence, fence: true})
			continue
		}
		out = append(out, outLine{text: escapeText(strings.TrimPrefix(l, indent))})
	}
	if inCode {
		out = append(out, outLine{text: fence, fence: true})
	}
	lines := make([]string, len(out))
	for i, o := range out {
		if o.fence {
			lines[i] = o.text
			continue
		}
		lines[i] = breakFences(neutralize(o.text))
	}
	return strings.Join(lines, "\n")
}

// sanitize makes md valid UTF-8 with "\n" line ends, without control
// characters other than tab or invisible ones (core.CleanText), and
// replaces the placeholder runes.
func sanitize(md string) string {
	return strings.Map(func(r rune) rune {
		if r >= phOpen && r <= phBold {
			return '\uFFFD'
		}
		return r
	}, core.CleanText(md))
}

// closesFence reports whether l closes a block opened with mark: the same
// character, at least as many, nothing else on the line.
func closesFence(l, mark string) bool {
	t := strings.TrimSpace(l)
	return len(t) >= len(mark) && strings.Trim(t, mark[:1]) == ""
}

// convertLine converts one line outside code blocks.
func convertLine(l string) string {
	if strings.TrimSpace(l) == "" {
		return l
	}
	if m := headingRE.FindStringSubmatch(l); m != nil {
		inner := strings.TrimSpace(convertInline(stripStrong(m[2])))
		if inner == "" {
			return ""
		}
		return "*" + inner + "*"
	}
	if isRule(l) {
		return "──────────"
	}
	if m := bulletRE.FindStringSubmatch(l); m != nil {
		rest := m[2]
		if t := taskRE.FindStringSubmatch(rest); t != nil {
			box := "☐ "
			if t[1] != " " {
				box = "☑ "
			}
			rest = box + rest[len(t[0]):]
		}
		return m[1] + "• " + convertInline(rest)
	}
	if rest, depth := unquote(l); depth > 0 {
		return strings.Repeat("&gt; ", depth) + convertLine(rest)
	}
	return convertInline(l)
}

// unquote strips the ">" markers of a block quote (nested ones too) and
// says how many there were.
func unquote(l string) (string, int) {
	depth := 0
	for {
		t := strings.TrimLeft(l, " \t")
		if len(l)-len(t) > 3 || !strings.HasPrefix(t, ">") {
			return l, depth
		}
		l = t[1:]
		if l != "" && (l[0] == ' ' || l[0] == '\t') {
			l = l[1:]
		}
		depth++
	}
}

// isRule reports whether l is a thematic break: three or more of the same
// -, * or _ (spaces between allowed) and nothing else.
func isRule(l string) bool {
	t := strings.NewReplacer(" ", "", "\t", "").Replace(l)
	return len(t) >= 3 && strings.Trim(t, t[:1]) == "" && strings.Contains("-*_", t[:1])
}

// stripStrong removes ** and __ markers (a heading is bold already).
func stripStrong(s string) string {
	return strings.NewReplacer("**", "", "__", "").Replace(s)
}

// convertInline converts the inline Markdown of one line. It runs in
// linear time: brackets, parentheses and backtick runs are matched up
// front.
func convertInline(s string) string {
	var prot []string
	protect := func(rendered string) string {
		prot = append(prot, rendered)
		return string(phOpen) + strconv.Itoa(len(prot)-1) + string(phClose)
	}
	closeBr := matchPairs(s, '[', ']')
	closePa := matchPairs(s, '(', ')')
	nextGT := make([]int, len(s)+1)
	nextGT[len(s)] = -1
	for i := len(s) - 1; i >= 0; i-- {
		nextGT[i] = nextGT[i+1]
		if s[i] == '>' {
			nextGT[i] = i
		}
	}
	ticks := newTickRuns(s)

	var b strings.Builder
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '`':
			n, end := ticks.at(i)
			if end >= 0 {
				if code := s[i+n : end]; strings.TrimSpace(code) != "" {
					b.WriteString(protect("`" + escapeText(strings.ReplaceAll(code, "`", "ˋ")) + "`"))
					i = end + n
					continue
				}
			}
			b.WriteString(s[i : i+n])
			i += n
			continue
		case c == '[' || (c == '!' && i+1 < len(s) && s[i+1] == '['):
			open := i
			if c == '!' {
				open++
			}
			if j := closeBr[open]; j > 0 && j+1 < len(s) && s[j+1] == '(' && closePa[j+1] > 0 {
				k := closePa[j+1]
				b.WriteString(protect(renderLink(s[open+1:j], linkTarget(s[j+2:k]), c == '!')))
				i = k + 1
				continue
			}
		case c == '<':
			if end := nextGT[i]; end > i {
				if u := s[i+1 : end]; bareURL.FindString(u) == u && u != "" {
					b.WriteString(protect("<" + escapeURL(u) + ">"))
					i = end + 1
					continue
				}
			}
		case c == 'h' || c == 'm':
			if i == 0 || !isWordByte(s[i-1]) {
				if u := bareURL.FindString(s[i:]); u != "" {
					b.WriteString(protect(escapeText(u)))
					i += len(u)
					continue
				}
			}
		}
		b.WriteByte(c)
		i++
	}
	t := b.String()
	t = boldItalicRE.ReplaceAllString(t, string(phBold)+"_${1}_"+string(phBold))
	t = boldStarRE.ReplaceAllString(t, string(phBold)+"${1}"+string(phBold))
	t = boldUnderRE.ReplaceAllString(t, "${1}"+string(phBold)+"${2}"+string(phBold))
	t = italicStarRE.ReplaceAllString(t, "${1}_${2}_")
	t = strikeRE.ReplaceAllString(t, "~${1}~")
	t = strings.ReplaceAll(t, string(phBold), "*")
	t = escapeText(t)
	return placeholderRE.ReplaceAllStringFunc(t, func(m string) string {
		n, _ := strconv.Atoi(m[len(string(phOpen)) : len(m)-len(string(phClose))])
		return prot[n]
	})
}

func isWordByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// matchPairs maps the index of each open byte to the index of the close
// byte that matches it (nesting counted), or -1.
func matchPairs(s string, open, close byte) []int {
	m := make([]int, len(s))
	var stack []int
	for i := 0; i < len(s); i++ {
		m[i] = -1
		switch s[i] {
		case open:
			stack = append(stack, i)
		case close:
			if len(stack) > 0 {
				m[stack[len(stack)-1]] = i
				stack = stack[:len(stack)-1]
			}
		}
	}
	return m
}

// tickRuns finds, for a run of backticks, the next run of the same length
// (a code span's end), in amortised constant time.
type tickRuns struct {
	pos   []int         // start of each run, in order
	size  []int         // its length
	index map[int]int   // run start → run number
	byLen map[int][]int // length → run numbers, ascending
	head  map[int]int   // length → first candidate in byLen
}

func newTickRuns(s string) *tickRuns {
	t := &tickRuns{index: map[int]int{}, byLen: map[int][]int{}, head: map[int]int{}}
	for i := 0; i < len(s); {
		if s[i] != '`' {
			i++
			continue
		}
		n := 1
		for i+n < len(s) && s[i+n] == '`' {
			n++
		}
		t.index[i] = len(t.pos)
		t.byLen[n] = append(t.byLen[n], len(t.pos))
		t.pos, t.size = append(t.pos, i), append(t.size, n)
		i += n
	}
	return t
}

// at returns the length of the run starting at i and the start of the
// next run of that length, or -1.
func (t *tickRuns) at(i int) (n, end int) {
	r := t.index[i] // the scanner only stops at the start of a run
	n = t.size[r]
	runs := t.byLen[n]
	h := t.head[n]
	for h < len(runs) && runs[h] <= r {
		h++
	}
	t.head[n] = h
	if h == len(runs) {
		return n, -1
	}
	return n, t.pos[runs[h]]
}

// linkTarget cleans the (…) part of a Markdown link: an optional title
// ("url "title"") and angle brackets are dropped.
func linkTarget(target string) string {
	target = strings.TrimSpace(target)
	if k := strings.IndexAny(target, " \t"); k >= 0 {
		target = target[:k]
	}
	return strings.TrimSuffix(strings.TrimPrefix(target, "<"), ">")
}

// renderLink renders a Markdown link as <url|label> when the target is a
// web or mail address, and as plain "label (target)" otherwise (so no
// Slack control sequence can be built from a link).
func renderLink(label, target string, image bool) string {
	text := strings.TrimSpace(plainLabel(label))
	if image && text == "" {
		text = "image"
	}
	if !bareURL.MatchString(target) || bareURL.FindString(target) != target {
		if target == "" {
			return escapeText(text)
		}
		if text == "" {
			return escapeText(target)
		}
		return escapeText(text + " (" + target + ")")
	}
	if text == "" || text == target {
		return "<" + escapeURL(target) + ">"
	}
	return "<" + escapeURL(target) + "|" + escapeText(text) + ">"
}

// plainLabel drops emphasis and code markers from a link label.
func plainLabel(s string) string {
	return strings.NewReplacer("**", "", "__", "", "~~", "", "`", "", "*", "").Replace(s)
}

// escapeURL makes u safe inside <…|…>: the characters that end or split
// the sequence are percent-encoded and & is escaped.
func escapeURL(u string) string {
	u = strings.NewReplacer("|", "%7C", "<", "%3C", ">", "%3E", " ", "%20").Replace(u)
	return strings.ReplaceAll(u, "&", "&amp;")
}

var textEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// escapeText escapes the three characters Slack reserves.
func escapeText(s string) string { return textEscaper.Replace(s) }

// neutralize puts a zero-width space after the "@" of @here, @channel and
// @everyone.
func neutralize(s string) string {
	return pingRE.ReplaceAllString(s, "${1}@"+zwsp+"${2}")
}

// breakFences puts zero-width spaces into runs of three or more backticks,
// so only fence lines open or close code blocks.
func breakFences(s string) string {
	for strings.Contains(s, fence) {
		s = strings.ReplaceAll(s, fence, "``"+zwsp+"`")
	}
	return s
}

// slackTokenRE matches Slack's <…> sequences in message text.
var slackTokenRE = regexp.MustCompile(`<([^<>\n]*)>`)

var textUnescaper = strings.NewReplacer("&lt;", "<", "&gt;", ">", "&amp;", "&")

// plainText turns Slack message markup into plain text for the model:
// <@U…> becomes @name or @U…, <#C…|name> #name, <!here> @here, <url|label>
// "label (url)", and &amp; &lt; &gt; their characters. A mention of the bot
// (botUserID) is dropped when stripBot, else written @botName.
func plainText(s, botUserID, botName string, stripBot bool) string {
	s = slackTokenRE.ReplaceAllStringFunc(s, func(tok string) string {
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
