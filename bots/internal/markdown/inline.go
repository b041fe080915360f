package markdown

import (
	"strings"
	"unicode/utf8"

	"github.com/yuin/goldmark/ast"
	east "github.com/yuin/goldmark/extension/ast"

	lazy "github.com/mnemo-agent/mnemo/agent/text"
)

// mode is how inline content is written.
type mode int

const (
	normal    mode = iota
	inHeading      // strong emphasis dropped: the heading is bold already
	plain          // no markup and no escaping: link labels, table cells
)

// esc escapes text for the target (Slack only).
func (r *renderer) esc(s string) string {
	if r.d == slack {
		return escapeText(s)
	}
	return s
}

func (r *renderer) text(s string, m mode) string {
	if m == plain {
		return s
	}
	return r.esc(s)
}

// inline renders the inline children of n.
func (r *renderer) inline(n ast.Node, m mode) string {
	var b strings.Builder
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		b.WriteString(r.inlineNode(c, m))
	}
	return b.String()
}

func (r *renderer) inlineNode(n ast.Node, m mode) string {
	switch n := n.(type) {
	case *ast.Text:
		// The source as written: backslash escapes and entities are left
		// to the platform (Discord reads them; Slack shows them).
		s := r.text(string(n.Segment.Value(r.src)), m)
		if n.SoftLineBreak() || n.HardLineBreak() {
			s += "\n"
		}
		return s
	case *ast.String:
		return r.text(string(n.Value), m)
	case *ast.CodeSpan:
		return r.codeSpan(n, m)
	case *ast.Emphasis:
		return r.emphasis(n, m)
	case *east.Strikethrough:
		inner := r.inline(n, m)
		switch {
		case m == plain:
			return inner
		case r.d == slack:
			return "~" + inner + "~"
		}
		return "~~" + inner + "~~"
	case *ast.Link:
		return r.link(r.inline(n, plain), string(n.Destination), false, m)
	case *ast.Image:
		return r.link(r.inline(n, plain), string(n.Destination), true, m)
	case *ast.AutoLink:
		return r.autoLink(n, m)
	case *ast.RawHTML:
		var b strings.Builder
		for i := range n.Segments.Len() {
			s := n.Segments.At(i)
			b.Write(s.Value(r.src))
		}
		return r.text(b.String(), m)
	case *east.TaskCheckBox:
		if n.IsChecked {
			return "☑ "
		}
		return "☐ "
	}
	return r.inline(n, m)
}

// codeSpan keeps the code as it is. Slack cannot show a backtick inside
// inline code: it becomes ˋ (U+02CB).
func (r *renderer) codeSpan(n *ast.CodeSpan, m mode) string {
	var b strings.Builder
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		if t, ok := c.(*ast.Text); ok {
			b.Write(t.Segment.Value(r.src))
		}
	}
	code := strings.ReplaceAll(b.String(), "\n", " ")
	switch {
	case m == plain:
		return code
	case r.d == slack:
		return "`" + escapeText(strings.ReplaceAll(code, "`", "ˋ")) + "`"
	}
	ticks := strings.Repeat("`", longestRun(code, '`')+1)
	if strings.HasPrefix(code, "`") || strings.HasSuffix(code, "`") {
		return ticks + " " + code + " " + ticks
	}
	return ticks + code + ticks
}

// emphasis: Slack *bold* and _italic_, Discord **bold** and _italic_.
// Emphasis inside a word (a*b*c) is not shown by either platform's
// underscore form, so it keeps its asterisks.
func (r *renderer) emphasis(n *ast.Emphasis, m mode) string {
	inner := r.inline(n, m)
	if m == plain || m == inHeading && n.Level >= 2 {
		return inner
	}
	stars := strings.Repeat("*", n.Level)
	if intraword(n, r.src) {
		return stars + inner + stars
	}
	if r.d == discord {
		if n.Level == 1 {
			return "_" + inner + "_"
		}
		return "**" + inner + "**"
	}
	if n.Level == 1 {
		if c, ok := n.FirstChild().(*ast.Emphasis); ok && c.NextSibling() == nil && c.Level == 2 && m == normal {
			return "*_" + r.inline(c, m) + "_*" // Slack's order for bold italics
		}
		return "_" + inner + "_"
	}
	return "*" + inner + "*"
}

// intraword: a letter or digit right before or after n.
func intraword(n ast.Node, src []byte) bool {
	if t, ok := n.PreviousSibling().(*ast.Text); ok {
		v := t.Segment.Value(src)
		if c, _ := utf8.DecodeLastRune(v); len(v) > 0 && isWord(c) && !t.SoftLineBreak() && !t.HardLineBreak() {
			return true
		}
	}
	if t, ok := n.NextSibling().(*ast.Text); ok {
		v := t.Segment.Value(src)
		if c, _ := utf8.DecodeRune(v); len(v) > 0 && isWord(c) {
			return true
		}
	}
	return false
}

// link renders a link or image whose target is a web or mail address as a
// link (Slack <url|label>, Discord [label](url)), and any other as
// "label (target)".
func (r *renderer) link(label, dest string, image bool, m mode) string {
	label = strings.TrimSpace(label)
	if image && label == "" {
		label = "image"
	}
	switch {
	case m == plain && label != "":
		return label
	case m == plain:
		return dest
	case !webURL.Get().MatchString(dest) && dest == "":
		return r.esc(label)
	case !webURL.Get().MatchString(dest) && label == "":
		return r.esc(dest)
	case !webURL.Get().MatchString(dest):
		return r.esc(label + " (" + dest + ")")
	case r.d == slack && (label == "" || label == dest):
		return "<" + escapeURL(dest) + ">"
	case r.d == slack:
		return "<" + escapeURL(dest) + "|" + escapeText(label) + ">"
	case label == "" || label == dest:
		return dest
	}
	return "[" + labelEscaper.Replace(label) + "](" + discordURL.Replace(dest) + ")"
}

var (
	plainEmail   = lazy.NewRegexp(`^[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+$`)
	labelEscaper = strings.NewReplacer("[", `\[`, "]", `\]`)
	// discordURL: what would end a masked link's target early.
	discordURL = strings.NewReplacer("(", "%28", ")", "%29", " ", "%20")
)

// autoLink: <url> stays a link (Slack checks it is a web or mail
// address); a bare address is left as written, as both platforms link it
// themselves.
func (r *renderer) autoLink(n *ast.AutoLink, m mode) string {
	label := string(n.Label(r.src))
	if _, bare := n.AttributeString(bareAttr); bare || m == plain {
		return r.text(label, m)
	}
	if r.d == discord {
		return "<" + label + ">"
	}
	url := string(n.URL(r.src))
	if n.AutoLinkType == ast.AutoLinkEmail {
		if !plainEmail.Get().MatchString(label) { // <!subteam^S1|@devs> is one to CommonMark
			return escapeText("<" + label + ">")
		}
		url = "mailto:" + label
	}
	if !webURL.Get().MatchString(url) {
		return escapeText("<" + label + ">")
	}
	if label == url {
		return "<" + escapeURL(url) + ">"
	}
	return "<" + escapeURL(url) + "|" + escapeText(label) + ">"
}
