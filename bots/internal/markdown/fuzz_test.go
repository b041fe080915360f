package markdown

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/yuin/goldmark/ast"
	east "github.com/yuin/goldmark/extension/ast"

	"github.com/mnemo-agent/mnemo/bots/internal/clean"
)

// FuzzRender: whatever the model writes, both renderings are valid UTF-8,
// do not panic, keep every line of every code block and the content of
// every code span (Slack: escaped, with its zero-width spaces), and
// Slack's only lines with ``` are bare fence lines.
func FuzzRender(f *testing.F) {
	for _, s := range []string{
		"hello **world**", "```go\ncode < x\n```", "```\nunclosed", "~~~\n```\n~~~", "    indented\n\tcode",
		"- a\n  ```\n  x\n  ```", "> ```\n> q\n> ```", "`a` ``b`c`` ` `", "| a | `b` |\n|---|---|\n| 1 | 2 |",
		"[a](https://b) ![c](http://d) <https://e> <a@b.c> www.x.io", "# h\n- [ ] a\n* b\n> q\n---",
		"@here <!channel> &amp;", strings.Repeat("> ", 40) + "x", strings.Repeat("[x](", 80), "\xff\x00\uE000",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, md string) {
		sl, dc := Slack(md), Discord(md)
		for _, out := range []string{sl, dc} {
			if !utf8.ValidString(out) {
				t.Fatalf("invalid UTF-8: %q", out)
			}
		}
		for _, l := range strings.Split(sl, "\n") {
			if l != Fence && strings.Contains(l, Fence) {
				t.Fatalf("``` inside a Slack line %q of %q", l, sl)
			}
		}
		src := []byte(capDepth(clean.Text(md)))
		slackCode := func(s string) string { return breakFences(neutralize(escapeText(s))) }
		ast.Walk(parse(src), func(n ast.Node, entering bool) (ast.WalkStatus, error) {
			if !entering {
				return ast.WalkContinue, nil
			}
			switch n := n.(type) {
			case *ast.FencedCodeBlock, *ast.CodeBlock:
				for i := range n.Lines().Len() {
					seg := n.Lines().At(i)
					code := strings.TrimRight(string(seg.Value(src)), "\n")
					if !strings.Contains(sl, slackCode(code)) || !strings.Contains(dc, code) {
						t.Fatalf("code line %q altered:\nslack   %q\ndiscord %q", code, sl, dc)
					}
				}
			case *ast.Link, *ast.Image, *east.TableCell:
				return ast.WalkSkipChildren, nil // their code is text there
			case *ast.CodeSpan:
				r := &renderer{src: src}
				code := r.codeSpan(n, plain)
				if !strings.Contains(sl, neutralize(escapeText(strings.ReplaceAll(code, "`", "ˋ")))) || !strings.Contains(dc, code) {
					t.Fatalf("code span %q altered:\nslack   %q\ndiscord %q", code, sl, dc)
				}
			}
			return ast.WalkContinue, nil
		})
	})
}
