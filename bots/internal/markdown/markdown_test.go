package markdown

import (
	"strings"
	"sync"
	"testing"

	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/text"

	"github.com/mnemo-agent/mnemo/bots/internal/memorycmd"
	"github.com/mnemo-agent/mnemo/bots/internal/pipeline"
)

// The Slack rendering of inline Markdown is specified in bots/slack
// (TestToMrkdwn and friends); these are the blocks.
func TestSlackBlocks(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"# Title\n\ntext\n\n## Sub\n#### Deep", "*Title*\n\ntext\n\n*Sub*\n*Deep*"},
		{"# A *b* **c**", "*A _b_ c*"},
		{"Setext\n===\n\nTwo\n---", "*Setext*\n\n*Two*"},
		{"- a\n- b\n  - nested\n    1. deep", "• a\n• b\n    • nested\n        1. deep"},
		{"- a\n\n- b\n\n  second paragraph", "• a\n\n• b\n\n    second paragraph"},
		{"3. three\n4. four", "3. three\n4. four"},
		{"-\n- b", "•\n• b"},
		{"Intro:\n- a\n\nOutro", "Intro:\n• a\n\nOutro"},
		{"- item\n  ```go\n  x := 1\n  ```\n- next", "• item\n```\nx := 1\n```\n• next"},
		{"- ```\n  code\n  ```", "•\n```\ncode\n```"},
		{"> quote\n>\n> ```\n> a < b\n> ```\n> after", "&gt; quote\n&gt;\n```\na &lt; b\n```\n&gt; after"},
		{"| a | b |\n|:--|--:|\n| **x** | `y` |\n| long cell | 2 |\n\nafter",
			"```\na         | b\n----------+--\nx         | y\nlong cell | 2\n```\n\nafter"},
		{"| l | c | r |\n|:-|:-:|-:|\n| 1 | 2 | 3 |\n| xxxx | yyyy | zzzz |",
			"```\nl    |  c   |    r\n-----+------+-----\n1    |  2   |    3\nxxxx | yyyy | zzzz\n```"},
		{"| <@U1> | [l](https://x.io) |\n|---|---|\n| ``` | ![](https://x.io/i.png) |",
			"```\n&lt;@U1&gt; | l\n------+------\n``\u200b`   | image\n```"},
		{"[ref][1] and [Ref]\n\n[1]: https://x.io\n[ref]: ./local", "<https://x.io|ref> and Ref (./local)"},
		{"<div>\n<!here>\n</div>\n\nafter", "&lt;div&gt;\n&lt;!here&gt;\n&lt;/div&gt;\n\nafter"},
		{"text <b>bold</b> &amp; \\*stays\\*", "text &lt;b&gt;bold&lt;/b&gt; &amp;amp; \\*stays\\*"},
		{"a  \nhard\\\nbreaks\nsoft", "a\nhard\nbreaks\nsoft"},
		{"<a@b.c> <ftp://x.io/f> <x@y> www.x.io a@b.c", "<mailto:a@b.c|a@b.c> &lt;ftp://x.io/f&gt; <mailto:x@y|x@y> www.x.io a@b.c"},
		{"**https://x.io** *<https://y.io>*", "*https://x.io* _<https://y.io>_"},
		{"a*b*c and a**b**c", "a*b*c and a**b**c"},
		{"~one~ and ~~two~~", "~one~ and ~two~"},
		{"```\n```", "```\n```"},
		{"```\n@here\n```", "```\n@\u200bhere\n```"},
		{"\n\n\ntext\n\n\n\nmore\n\n", "text\n\nmore"},
		{"", ""},
	} {
		if got := Slack(c.in); got != c.want {
			t.Errorf("Slack(%q)\n got %q\nwant %q", c.in, got, c.want)
		}
	}
}

// TestDiscord: what Discord shows differently is rewritten; what it shows
// as Markdown says is left as written.
func TestDiscord(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		// As written.
		{"**bold** *it* _it_ ~~gone~~ `code` ||spoiler|| -# small", "**bold** _it_ _it_ ~~gone~~ `code` ||spoiler|| -# small"},
		{"# One\n## Two\n### Three", "# One\n## Two\n### Three"},
		{"- a\n- b\n  - nested\n1. one\n2. two", "- a\n- b\n  - nested\n1. one\n2. two"},
		{"> quote **b**\n\ntext", "> quote **b**\n\ntext"},
		{"```go\nif a < b {}\n```", "```go\nif a < b {}\n```"},
		{"[docs](https://x.io/a) <https://x.io> https://y.io/**a** @everyone <@1> <b>", "[docs](https://x.io/a) <https://x.io> https://y.io/**a** @everyone <@1> <b>"},
		{"\\*not\\* &amp; a*b*c", "\\*not\\* &amp; a*b*c"},
		// Rewritten.
		{"__bold__ and ***both***", "**bold** and _**both**_"},
		{"~one~", "~~one~~"},
		{"#### Four\n###### Six **b**", "**Four**\n**Six b**"},
		{"Setext\n===\n\nTwo\n---", "# Setext\n\n## Two"},
		{"---", Rule},
		{"- [ ] todo\n- [x] done", "- ☐ todo\n- ☑ done"},
		{"* star\n+ plus", "- star\n- plus"},
		{"![chart](https://x.io/c.png) ![](https://x.io/d.png)", "[chart](https://x.io/c.png) [image](https://x.io/d.png)"},
		{"[rel](./a.md) [go](https://w.org/Go_(lang)) [a [b]](https://x.io) [https://x.io](https://x.io)",
			"rel (./a.md) [go](https://w.org/Go_%28lang%29) [a \\[b\\]](https://x.io) https://x.io"},
		{"~~~py\nprint(1)\n~~~", "```py\nprint(1)\n```"},
		{"    indented\n    code", "```\nindented\ncode\n```"},
		{"````\n```\ninner\n```\n````", "````\n```\ninner\n```\n````"},
		{"- item\n  ```\n  code\n  ```", "- item\n```\ncode\n```"},
		{"`` a`b ``  and ```` ``` ````", "``a`b``  and ```` ``` ````"},
		{"`` `x` ``", "`` `x` ``"},
		{"| a | b |\n|---|---|\n| 1 | 2 |", "```\na | b\n--+--\n1 | 2\n```"},
		{"[x][r]\n\n[r]: https://x.io", "[x](https://x.io)"},
		{"a\x1b[31m\u202eb\r\nc [open", "a[31mb\nc [open"},
	} {
		if got := Discord(c.in); got != c.want {
			t.Errorf("Discord(%q)\n got %q\nwant %q", c.in, got, c.want)
		}
	}
}

// TestDiscordKeepsTheBotsTexts: the texts of the /memory flow and the
// adapters are Markdown Discord shows as it is.
func TestDiscordKeepsTheBotsTexts(t *testing.T) {
	for _, s := range []string{memorycmd.Usage, memorycmd.PathGrammar, memorycmd.NoMemoryText, memorycmd.BrokenText, memorycmd.ShowErrorText,
		memorycmd.NothingYetText, memorycmd.ForgetWhichText, memorycmd.WrongUserText, memorycmd.ExpiredText, memorycmd.CancelledText,
		pipeline.ErrorReplyText, pipeline.BusyReplyText} {
		if got := Discord(s); got != s {
			t.Errorf("Discord(%q)\n = %q", s, got)
		}
	}
}

// TestHostileInput: a line opens at most maxDepth containers and tries at
// most maxTries links or tags, a link target is at most maxDest bytes; the
// rest is text.
func TestHostileInput(t *testing.T) {
	deep := strings.Repeat("> ", maxDepth+5) + "x"
	want := strings.Repeat("> ", maxDepth-1) + ">" + " \\" + strings.Repeat("> ", 5) + "x"
	if got := Discord(deep); got != want {
		t.Errorf("Discord(%d quotes)\n got %q\nwant %q", maxDepth+5, got, want)
	}
	if got := tooDeep(strings.Repeat("1. ", maxDepth) + "- * + x"); got != 3*maxDepth {
		t.Errorf("tooDeep = %d; want %d", got, 3*maxDepth)
	}
	for _, l := range []string{strings.Repeat("> ", maxDepth) + "x", "12345678901. x", "-x", "1.x", ""} {
		if got := tooDeep(l); got != -1 {
			t.Errorf("tooDeep(%q) = %d", l, got)
		}
	}
	if got := capDepth("> a\n- b"); got != "> a\n- b" {
		t.Errorf("capDepth changed %q", got)
	}

	links := strings.Repeat("[a](https://x.io) ", maxTries+2)
	want = strings.Repeat("<https://x.io|a> ", maxTries) + "[a](https://x.io) [a](https://x.io)"
	if got := Slack(links); got != want {
		t.Errorf("Slack(%d links)\n got %q\nwant %q", maxTries+2, got, want)
	}
	// The budget is per line.
	two := strings.Repeat("[a](https://x.io) ", maxTries) + "\n" + strings.Repeat("[a](https://x.io) ", maxTries)
	if got := Slack(two); strings.Count(got, "<https://x.io|a>") != 2*maxTries {
		t.Errorf("a second line had no budget left: %q", got)
	}
	long := "https://x.io/" + strings.Repeat("x", maxDest)
	if got := Slack("[a](" + long + ") [b](" + long[:maxDest-20] + ")"); got != "[a]("+long+") <"+long[:maxDest-20]+"|b>" {
		t.Errorf("a link target past %d bytes: %.60q…", maxDest, got)
	}
	tags := strings.Repeat("<b> ", maxTries+1)
	if got := Discord(tags); got != strings.TrimSpace(tags) {
		t.Errorf("Discord(tags) = %q", got)
	}
}

// TestConcurrent: the shared parser is safe from several goroutines (run
// with -race).
func TestConcurrent(t *testing.T) {
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			in := strings.Repeat("**a** [l](https://x.io) <b> | x |\n", i+1)
			if Slack(in) == "" || Discord(in) == "" {
				t.Error("empty output")
			}
		})
	}
	wg.Wait()
}

func TestSlackInlineEdges(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"***both*** and ***a** b*", "*_both_* and _*a* b_"},
		{"*a*b and b*a*", "*a*b and b*a*"},
		{"[empty]() [](relative) [https://x.io](https://x.io) [](https://x.io)", "empty relative <https://x.io> <https://x.io>"},
		{"<!subteam^S1|@devs> <a.b+c@d.e>", "&lt;!subteam^S1|@devs&gt; <mailto:a.b+c@d.e|a.b+c@d.e>"},
		{"| ~~x~~ | [](https://x.io) | [a](./b) | <https://y.io> | <i>t</i> |\n|-|-|-|-|-|", "```\nx | https://x.io | a | https://y.io | &lt;i&gt;t&lt;/i&gt;\n--+--------------+---+--------------+---------\n```"},
		{"<!--\n<!here>\n-->\nafter", "&lt;!--\n&lt;!here&gt;\n--&gt;\nafter"},
		{"#", ""},
	} {
		if got := Slack(c.in); got != c.want {
			t.Errorf("Slack(%q)\n got %q\nwant %q", c.in, got, c.want)
		}
	}
	if !pingRE.Get().MatchString("hi @here") || pingRE.Get().MatchString("bob@here.com") {
		t.Error("pingRE")
	}
}

func TestDiscordEdges(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"~~~ a`b\ncode\n~~~", "```\ncode\n```"},
		{"#", ""},
		{"[](https://x.io) [](./rel) [x]()", "https://x.io ./rel x"},
	} {
		if got := Discord(c.in); got != c.want {
			t.Errorf("Discord(%q)\n got %q\nwant %q", c.in, got, c.want)
		}
	}
}

// oddInline and oddBlock stand for nodes an extension might add: their
// content is rendered, not dropped.
type oddInline struct{ ast.BaseInline }

func (n *oddInline) Kind() ast.NodeKind         { return kindOddInline }
func (n *oddInline) Dump(src []byte, level int) { ast.DumpHelper(n, src, level, nil, nil) }

type oddBlock struct{ ast.BaseBlock }

func (n *oddBlock) Kind() ast.NodeKind         { return kindOddBlock }
func (n *oddBlock) Dump(src []byte, level int) { ast.DumpHelper(n, src, level, nil, nil) }

var (
	kindOddInline = ast.NewNodeKind("oddInline")
	kindOddBlock  = ast.NewNodeKind("oddBlock")
)

// TestHandBuiltTree: nodes without source positions, goldmark's String
// node and unknown nodes.
func TestHandBuiltTree(t *testing.T) {
	src := []byte("x")
	doc := ast.NewDocument()
	p1 := ast.NewParagraph()
	p1.AppendChild(p1, ast.NewString([]byte("a<b")))
	doc.AppendChild(doc, p1)
	p2 := ast.NewParagraph() // no position: the parser's blank-line flag
	p2.SetBlankPreviousLines(true)
	odd := &oddInline{}
	odd.AppendChild(odd, ast.NewString([]byte("in")))
	p2.AppendChild(p2, odd)
	doc.AppendChild(doc, p2)
	p3 := ast.NewParagraph() // at the start of the source, yet not first
	p3.SetPos(0)
	p3.AppendChild(p3, ast.NewTextSegment(text.NewSegment(0, 1)))
	doc.AppendChild(doc, p3)
	ob := &oddBlock{}
	inner := ast.NewParagraph()
	inner.AppendChild(inner, ast.NewString([]byte("kept")))
	ob.AppendChild(ob, inner)
	doc.AppendChild(doc, ob)
	leaf := &oddBlock{}
	doc.AppendChild(doc, leaf)

	r := &renderer{src: src, d: slack}
	var got []string
	for _, l := range r.blocks(doc) {
		got = append(got, l.text)
	}
	if want := []string{"a&lt;b", "", "in", "x", "kept", ""}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("got %q; want %q", got, want)
	}
}
