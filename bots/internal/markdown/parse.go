package markdown

import (
	"bytes"
	"strings"
	"sync"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"

	"github.com/yuin/goldmark/util"

	lazy "github.com/mnemo-agent/mnemo/agent/text"
)

// goldmark is quadratic on some hostile input: a long line of unclosed
// links ("[x](" repeated) or tags ("<a " repeated) is scanned to its end
// from each one, so is an unclosed code span ("“ ` `" …), each emphasis closer looks back through every unmatched
// opener of its paragraph ("_a" repeated), and containers nested
// thousands deep on one line are re-walked for each. So a line opens at
// most maxTries code spans, links, images, autolinks and tags of each kind, a
// paragraph at most maxDelims runs of *, _ and ~, and a line at most
// maxDepth block quotes and lists; the rest is text. Model output never
// comes close.
const (
	maxTries  = 64
	maxDest   = 2048 // bytes of a link target without a space or ")"
	maxDelims = 512
	maxDepth  = 32
)

// delims is the budget the emphasis and strikethrough parsers share: their
// runs go on one list, which goldmark walks.
var delims = parser.NewContextKey()

// lazyParser holds the parser, built at its first use (a chat never
// renders for Slack or Discord, and building it is a good part of a start).
var lazyParser struct {
	once sync.Once
	p    parser.Parser
}

// mdParser is safe for concurrent use: goldmark keeps the state of a
// parse in a context of its own.
func mdParser() parser.Parser {
	lazyParser.once.Do(func() { lazyParser.p = newParser() })
	return lazyParser.p
}

func newParser() parser.Parser {
	return goldmark.New(
		goldmark.WithParser(parser.NewParser(
			parser.WithBlockParsers(parser.DefaultBlockParsers()...),
			parser.WithInlineParsers(
				util.Prioritized(perLine(parser.NewCodeSpanParser()), 100),
				util.Prioritized(perLine(parser.NewLinkParser()), 200),
				util.Prioritized(perLine(parser.NewAutoLinkParser()), 300),
				util.Prioritized(perLine(parser.NewRawHTMLParser()), 400),
				util.Prioritized(perBlock(parser.NewEmphasisParser()), 500),
				util.Prioritized(perBlock(extension.NewStrikethroughParser()), 500),
				// Bare addresses as GitHub finds them, up to a space or "<"
				// (goldmark's own pattern stops at "*", so emphasis would be
				// read inside an address).
				util.Prioritized(bareLinks{extension.NewLinkifyParser(extension.WithLinkifyURLRegexp(bareURL.Get()))}, 999),
			),
			parser.WithParagraphTransformers(parser.DefaultParagraphTransformers()...),
		)),
		goldmark.WithExtensions(extension.Table, extension.TaskList),
	).Parser()
}

var bareURL = lazy.NewRegexp(`^(?:https?|ftp)://[^\s<]+`)

// parse parses md (cleaned already) into its syntax tree.
func parse(src []byte) ast.Node {
	return mdParser().Parse(text.NewReader(src))
}

// budgeted is an inline parser that gives up (its trigger is text) after
// limit tries: of one trigger byte on one line (perLine), or of all its
// triggers in one block (perBlock).
type budgeted struct {
	parser.InlineParser
	key     parser.ContextKey
	limit   int
	perLine bool
}

func perLine(p parser.InlineParser) *budgeted {
	return &budgeted{InlineParser: p, key: parser.NewContextKey(), limit: maxTries, perLine: true}
}

func perBlock(p parser.InlineParser) *budgeted {
	return &budgeted{InlineParser: p, key: delims, limit: maxDelims}
}

type tries struct {
	block ast.Node
	line  int
	n     map[byte]int
}

func (p *budgeted) Parse(parent ast.Node, block text.Reader, pc parser.Context) ast.Node {
	t, _ := pc.Get(p.key).(*tries)
	l, _ := block.Position()
	if !p.perLine {
		l = 0
	}
	if t == nil || t.block != parent || t.line != l {
		t = &tries{block: parent, line: l, n: map[byte]int{}}
		pc.Set(p.key, t)
	}
	var c byte // perBlock: one count for every trigger
	if line, _ := block.PeekLine(); p.perLine && len(line) > 0 {
		c = line[0]
	}
	if t.n[c]++; t.n[c] > p.limit {
		return nil
	}
	if line, _ := block.PeekLine(); p.perLine && endlessTarget(line) {
		return nil
	}
	return p.InlineParser.Parse(parent, block, pc)
}

// endlessTarget: line starts "](" and no space, tab or ")" ends the target
// within maxDest bytes: goldmark would scan to the line's end for it.
func endlessTarget(line []byte) bool {
	if len(line) < 2 || line[0] != ']' || line[1] != '(' {
		return false
	}
	rest := line[2:min(len(line), 2+maxDest)]
	return bytes.IndexAny(rest, " \t\n)") < 0 && len(line) > 2+maxDest
}

// CloseBlock passes the end of a block on (the link parser turns the
// "[" left open into text there).
func (p *budgeted) CloseBlock(parent ast.Node, block text.Reader, pc parser.Context) {
	if cb, ok := p.InlineParser.(parser.CloseBlocker); ok {
		cb.CloseBlock(parent, block, pc)
	}
}

// bareAttr marks an AutoLink found in text (a bare address) rather than
// written <…>.
const bareAttr = "mnemo-bare"

// bareLinks wraps goldmark's linkify parser to mark what it finds. It
// looks for web addresses only: linkify's e-mail search scans the rest of
// the line from every "*", "_" and "~" (quadratic on "*a*a*a…"), and a bare
// e-mail address is written as it came anyway.
type bareLinks struct{ parser.InlineParser }

func (p bareLinks) Parse(parent ast.Node, block text.Reader, pc parser.Context) ast.Node {
	line, _ := block.PeekLine()
	if len(line) > 0 && bytes.IndexByte([]byte(" *_~("), line[0]) >= 0 {
		line = line[1:]
	}
	if !bytes.HasPrefix(line, []byte("http")) && !bytes.HasPrefix(line, []byte("ftp:")) && !bytes.HasPrefix(line, []byte("www.")) {
		return nil
	}
	n := p.InlineParser.Parse(parent, block, pc)
	if n != nil {
		n.SetAttributeString(bareAttr, true)
	}
	return n
}

// capDepth puts a backslash before the container marker (">", a bullet or
// "1." / "1)") that would nest a line deeper than maxDepth, so the rest of
// the line is text.
func capDepth(md string) string {
	if strings.Count(md, ">")+strings.Count(md, "-")+strings.Count(md, "*")+strings.Count(md, "+")+strings.Count(md, ".")+strings.Count(md, ")") <= maxDepth {
		return md
	}
	lines := strings.Split(md, "\n")
	for i, l := range lines {
		if at := tooDeep(l); at >= 0 {
			lines[i] = l[:at] + `\` + l[at:]
		}
	}
	return strings.Join(lines, "\n")
}

// tooDeep is where in l the marker past maxDepth starts, or -1.
func tooDeep(l string) int {
	depth := 0
	for i := 0; i < len(l); {
		for i < len(l) && (l[i] == ' ' || l[i] == '\t') {
			i++
		}
		start := i
		switch {
		case i < len(l) && l[i] == '>':
			i++
		case i+1 < len(l) && strings.IndexByte("-*+", l[i]) >= 0 && (l[i+1] == ' ' || l[i+1] == '\t'):
			i++
		default:
			j := i
			for j < len(l) && j-i < 9 && l[j] >= '0' && l[j] <= '9' {
				j++
			}
			if j == i || j+1 >= len(l) || (l[j] != '.' && l[j] != ')') || (l[j+1] != ' ' && l[j+1] != '\t') {
				return -1
			}
			i = j + 1
		}
		if depth++; depth > maxDepth {
			return start
		}
	}
	return -1
}
