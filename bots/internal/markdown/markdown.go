package markdown

import (
	"bytes"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/yuin/goldmark/ast"
	east "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/text"

	lazy "github.com/mnemo-agent/mnemo/agent/text"
	"github.com/mnemo-agent/mnemo/bots/internal/clean"
)

// Fence is the code fence Slack output uses: a line of its own.
const Fence = "```"

// zwsp (zero-width space) breaks pings and stray backtick runs in Slack.
const zwsp = "\u200b"

// Rule is how a thematic break (---) is shown.
const Rule = "──────────"

var (
	// webURL: a target Slack and Discord can link (anything else is shown
	// as text, so no Slack control sequence can be built from a link).
	webURL = lazy.NewRegexp(`^(?:https?://|mailto:)[^\s<>]+$`)
	// pingRE finds the words Slack turns into channel-wide pings when they
	// are linked; a "@" inside a word (an e-mail address) is not one.
	pingRE = lazy.NewRegexp(`(?i)(^|[^\p{L}\p{N}_])@(channel|here|everyone)`)
)

// Slack renders Markdown as Slack mrkdwn. Its code fences are bare "```"
// lines, and no other line holds three backticks in a row.
func Slack(md string) string {
	lines := render(md, slack)
	out := make([]string, len(lines))
	for i, l := range lines {
		switch l.kind {
		case fenceLine:
			out[i] = Fence
		case codeLine:
			out[i] = breakFences(neutralize(escapeText(l.text)))
		default:
			out[i] = breakFences(neutralize(l.text))
		}
	}
	return strings.Join(out, "\n")
}

// Discord renders Markdown as the Markdown Discord shows. Its code blocks
// are fenced with backtick lines at the start of a line.
func Discord(md string) string {
	lines := render(md, discord)
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = l.text
	}
	return strings.Join(out, "\n")
}

// dialect is the target platform.
type dialect int

const (
	slack dialect = iota
	discord
)

// kinds of output lines: text is written as rendered (Slack text is
// escaped already), code lines keep their content (Slack escapes it at
// the end), fence lines open or close a code block.
const (
	textLine = iota
	codeLine
	fenceLine
)

type line struct {
	text string
	kind int
}

type renderer struct {
	src []byte
	d   dialect
}

func render(md string, d dialect) []line {
	src := []byte(capDepth(clean.Text(md)))
	r := &renderer{src: src, d: d}
	return r.blocks(parse(src))
}

// blocks renders the children of a container, a blank line between two
// where the source had one.
func (r *renderer) blocks(parent ast.Node) []line {
	var out []line
	for n := parent.FirstChild(); n != nil; n = n.NextSibling() {
		b := r.block(n)
		if b == nil {
			continue
		}
		if len(out) > 0 && r.blankBefore(n) {
			out = append(out, line{})
		}
		out = append(out, b...)
	}
	return out
}

// blankBefore: the source line before block n is blank (or holds only
// block quote markers).
func (r *renderer) blankBefore(n ast.Node) bool {
	pos := n.Pos()
	if pos < 0 || pos > len(r.src) {
		return n.HasBlankPreviousLines()
	}
	start := bytes.LastIndexByte(r.src[:pos], '\n') + 1
	if start == 0 {
		return false
	}
	prev := r.src[bytes.LastIndexByte(r.src[:start-1], '\n')+1 : start-1]
	return len(bytes.Trim(prev, " \t>")) == 0
}

func (r *renderer) block(n ast.Node) []line {
	switch n := n.(type) {
	case *ast.Heading:
		return []line{{text: r.heading(n)}}
	case *ast.ThematicBreak:
		return []line{{text: Rule}}
	case *ast.FencedCodeBlock:
		lang := ""
		if r.d == discord {
			lang = string(n.Language(r.src))
		}
		return r.code(r.rawLines(n.Lines()), lang)
	case *ast.CodeBlock:
		return r.code(r.rawLines(n.Lines()), "")
	case *ast.HTMLBlock:
		raw := r.rawLines(n.Lines())
		if n.HasClosure() {
			raw = append(raw, r.segment(n.ClosureLine))
		}
		return r.textLines(r.esc(strings.Join(raw, "\n")))
	case *ast.Blockquote:
		return r.quote(r.blocks(n))
	case *ast.List:
		return r.list(n)
	case *east.Table:
		return r.code(r.table(n), "")
	case *ast.LinkReferenceDefinition:
		return nil // used by the links that name it
	case *ast.Paragraph, *ast.TextBlock:
		return r.textLines(r.inline(n, normal))
	}
	if n.Type() == ast.TypeBlock && n.HasChildren() { // a container this renderer does not know
		return r.blocks(n)
	}
	return r.textLines(r.inline(n, normal))
}

// textLines cuts rendered text into lines.
func (r *renderer) textLines(s string) []line {
	var out []line
	for _, l := range strings.Split(s, "\n") {
		out = append(out, line{text: l})
	}
	return out
}

// rawLines is a leaf block's source, one string per line.
func (r *renderer) rawLines(segs *text.Segments) []string {
	out := make([]string, segs.Len())
	for i := range segs.Len() {
		out[i] = r.segment(segs.At(i))
	}
	return out
}

func (r *renderer) segment(s text.Segment) string {
	return strings.TrimRight(string(s.Value(r.src)), "\n")
}

// code renders a code block: a fence line, the lines, a fence line. On
// Discord the fence is longer than any backtick run in the code (which
// split.Text honours; Discord itself cannot nest fences) and keeps the
// language.
func (r *renderer) code(lines []string, lang string) []line {
	open := Fence
	if r.d == discord {
		run := 0
		for _, l := range lines {
			run = max(run, longestRun(l, '`'))
		}
		if run >= len(Fence) {
			open = strings.Repeat("`", run+1)
		}
		if strings.Contains(lang, "`") {
			lang = ""
		}
	}
	out := []line{{text: open + lang, kind: fenceLine}}
	for _, l := range lines {
		out = append(out, line{text: l, kind: codeLine})
	}
	return append(out, line{text: open, kind: fenceLine})
}

// quote prefixes a block quote's lines with the quote marker. Code blocks
// are left out of it: a fence must start its line.
func (r *renderer) quote(in []line) []line {
	mark := "> "
	if r.d == slack {
		mark = "&gt; "
	}
	out := make([]line, len(in))
	for i, l := range in {
		if l.kind == textLine {
			l.text = strings.TrimRight(mark+l.text, " ")
		}
		out[i] = l
	}
	return out
}

// list renders list items: a bullet (Slack "•", Discord "-") or the
// item's number on the first line, the rest indented.
func (r *renderer) list(n *ast.List) []line {
	var out []line
	num := n.Start
	for it := n.FirstChild(); it != nil; it = it.NextSibling() {
		marker := "• "
		if r.d == discord {
			marker = "- "
		}
		if n.IsOrdered() {
			marker = strconv.Itoa(num) + string(n.Marker) + " "
			num++
		}
		indent := strings.Repeat(" ", utf8.RuneCountInString(marker))
		if r.d == slack {
			indent = "    "
		}
		if len(out) > 0 && r.blankBefore(it) {
			out = append(out, line{})
		}
		body := r.blocks(it)
		if len(body) == 0 || body[0].kind != textLine {
			out = append(out, line{text: strings.TrimRight(marker, " ")})
		} else {
			out = append(out, line{text: marker + body[0].text})
			body = body[1:]
		}
		for _, l := range body {
			if l.kind == textLine && l.text != "" {
				l.text = indent + l.text
			}
			out = append(out, l)
		}
	}
	return out
}

// heading renders a heading: on Slack a bold line; on Discord "#" to "###"
// as written, a bold line for the levels Discord does not show.
func (r *renderer) heading(n *ast.Heading) string {
	s := strings.TrimSpace(strings.ReplaceAll(r.inline(n, inHeading), "\n", " "))
	switch {
	case s == "":
		return ""
	case r.d == discord && n.Level <= 3:
		return strings.Repeat("#", n.Level) + " " + s
	case r.d == discord:
		return "**" + s + "**"
	}
	return "*" + s + "*"
}

// table renders a table as aligned plain-text lines (neither platform
// shows Markdown tables).
func (r *renderer) table(n *east.Table) []string {
	var rows [][]string
	var widths []int
	for row := n.FirstChild(); row != nil; row = row.NextSibling() {
		var cells []string
		for c := row.FirstChild(); c != nil; c = c.NextSibling() {
			s := strings.TrimSpace(strings.ReplaceAll(r.inline(c, plain), "\n", " "))
			if i := len(cells); i >= len(widths) {
				widths = append(widths, 0)
			}
			widths[len(cells)] = max(widths[len(cells)], utf8.RuneCountInString(s))
			cells = append(cells, s)
		}
		rows = append(rows, cells)
	}
	out := make([]string, 0, len(rows)+1)
	for i, cells := range rows {
		var b strings.Builder
		for j, c := range cells {
			if j > 0 {
				b.WriteString(" | ")
			}
			pad := widths[j] - utf8.RuneCountInString(c)
			align := east.AlignNone
			if j < len(n.Alignments) {
				align = n.Alignments[j]
			}
			switch align {
			case east.AlignRight:
				b.WriteString(strings.Repeat(" ", pad) + c)
			case east.AlignCenter:
				b.WriteString(strings.Repeat(" ", pad/2) + c + strings.Repeat(" ", pad-pad/2))
			default:
				b.WriteString(c + strings.Repeat(" ", pad))
			}
		}
		out = append(out, strings.TrimRight(b.String(), " "))
		if i == 0 {
			sep := make([]string, len(widths))
			for j, w := range widths {
				sep[j] = strings.Repeat("-", max(w, 1))
			}
			out = append(out, strings.Join(sep, "-+-"))
		}
	}
	return out
}

// longestRun is the length of the longest run of c in s.
func longestRun(s string, c byte) int {
	best, run := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] != c {
			run = 0
			continue
		}
		run++
		best = max(best, run)
	}
	return best
}

// isWord: a letter or digit (emphasis next to one does not show in Slack).
func isWord(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

// escapeText escapes the three characters Slack reserves.
func escapeText(s string) string { return textEscaper.Replace(s) }

var textEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// escapeURL makes u safe inside Slack's <…|…>: the characters that end or
// split the sequence are percent-encoded and & is escaped.
func escapeURL(u string) string {
	u = strings.NewReplacer("|", "%7C", "<", "%3C", ">", "%3E", " ", "%20").Replace(u)
	return strings.ReplaceAll(u, "&", "&amp;")
}

// neutralize puts a zero-width space after the "@" of @here, @channel and
// @everyone.
func neutralize(s string) string {
	return pingRE.Get().ReplaceAllString(s, "${1}@"+zwsp+"${2}")
}

// breakFences puts zero-width spaces into runs of three or more backticks,
// so only fence lines open or close code blocks.
func breakFences(s string) string {
	for strings.Contains(s, Fence) {
		s = strings.ReplaceAll(s, Fence, "``"+zwsp+"`")
	}
	return s
}
