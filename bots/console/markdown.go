package console

import (
	"strings"

	"github.com/mnemo-agent/mnemo/agent/text"
)

// ANSI styles for a terminal that takes colour (Config.Color).
const (
	ansiBold      = "\x1b[1m"
	ansiDim       = "\x1b[2m"
	ansiItalic    = "\x1b[3m"
	ansiUnderline = "\x1b[4m"
	ansiCode      = "\x1b[36m"
	ansiYou       = "\x1b[1;32m"
	ansiMnemo     = "\x1b[1;36m"
	ansiReset     = "\x1b[0m"
	clearRight    = "\x1b[K"
)

var (
	codeRE   = text.NewRegexp("`([^`\n]+)`")
	boldRE   = text.NewRegexp(`\*\*([^*\n]+)\*\*|__([^_\n]+)__`)
	italicRE = text.NewRegexp(`(^|[^\w*])\*([^*\s](?:[^*\n]*[^*\s])?)\*($|[^\w*])`)
	// _italic_ as CommonMark reads it: not inside a word (snake_case).
	underRE  = text.NewRegexp(`(^|[^\w_])_([^_\s](?:[^_\n]*[^_\s])?)_($|[^\w_])`)
	linkRE   = text.NewRegexp(`\[([^\]\n]+)\]\(([^)\s]+)\)`)
	bulletRE = text.NewRegexp(`^(\s*)[-*+] (.*)$`)
	ruleRE   = text.NewRegexp(`^\s*([-*_])(\s*([-*_]))+\s*$`)
)

// style renders the Markdown a model commonly writes for a terminal:
// headings bold, **bold**, *italic* and _italic_, `code` and fenced blocks in cyan,
// list bullets as •, quotes and rules dimmed, links as "text (url)".
// Anything else is left as written.
func style(text string) string {
	lines := strings.Split(text, "\n")
	fenced := false
	for i, l := range lines {
		lines[i] = styleLine(l, &fenced)
	}
	return strings.Join(lines, "\n")
}

// styleLine renders one line of a reply, as style does; fenced says
// whether the line is inside a fenced code block, and is updated.
func styleLine(l string, fenced *bool) string {
	trimmed := strings.TrimSpace(l)
	switch {
	case strings.HasPrefix(trimmed, "```"):
		*fenced = !*fenced
		return ansiDim + l + ansiReset
	case *fenced:
		return ansiCode + l + ansiReset
	case heading(l) != "":
		h := heading(l)
		if strings.HasPrefix(l, "# ") {
			h = ansiUnderline + h
		}
		return ansiBold + h + ansiReset
	case ruleRE.Get().MatchString(l) && len(trimmed) >= 3:
		return ansiDim + strings.Repeat("─", 40) + ansiReset
	case strings.HasPrefix(trimmed, ">"):
		return ansiDim + "│ " + ansiReset + inline(strings.TrimSpace(strings.TrimPrefix(trimmed, ">")))
	}
	if m := bulletRE.Get().FindStringSubmatch(l); m != nil {
		return m[1] + ansiCode + "•" + ansiReset + " " + inline(m[2])
	}
	return inline(l)
}

// heading returns the text of a "# Title" line (1 to 6 #), or "".
func heading(l string) string {
	h := strings.TrimLeft(l, "#")
	if n := len(l) - len(h); n == 0 || n > 6 || !strings.HasPrefix(h, " ") {
		return ""
	}
	return strings.TrimSpace(h)
}

// inline styles one line's spans; the inside of `code` is left alone.
func inline(l string) string {
	var b strings.Builder
	for {
		loc := codeRE.Get().FindStringSubmatchIndex(l)
		if loc == nil {
			b.WriteString(emphasis(l))
			return b.String()
		}
		b.WriteString(emphasis(l[:loc[0]]))
		b.WriteString(ansiCode + l[loc[2]:loc[3]] + ansiReset)
		l = l[loc[1]:]
	}
}

func emphasis(s string) string {
	s = linkRE.Get().ReplaceAllString(s, "$1 "+ansiDim+"($2)"+ansiReset)
	s = boldRE.Get().ReplaceAllString(s, ansiBold+"$1$2"+ansiReset)
	s = italicRE.Get().ReplaceAllString(s, "$1"+ansiItalic+"$2"+ansiReset+"$3")
	return underRE.Get().ReplaceAllString(s, "$1"+ansiItalic+"$2"+ansiReset+"$3")
}
