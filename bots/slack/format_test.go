package slack

import (
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/mnemo-agent/mnemo/bots/internal/split"
)

// pingRE finds what would ping a whole channel (as markdown's own, which
// Slack escapes).
var pingRE = regexp.MustCompile(`(?i)(^|[^\p{L}\p{N}_])@(channel|here|everyone)`)

// escapeText is what Slack needs of plain text: &, < and > escaped.
func escapeText(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

func TestToMrkdwn(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"**bold** and __also__", "*bold* and *also*"},
		{"*italic* and _italic_", "_italic_ and _italic_"},
		{"***both***", "*_both_*"},
		{"~~gone~~", "~gone~"},
		{"2 * 3 * 4 and a*b*c", "2 * 3 * 4 and a*b*c"},
		{"snake_case_name and __init__ fine", "snake_case_name and *init* fine"},
		{"[the docs](https://example.com/a?b=1&c=2)", "<https://example.com/a?b=1&amp;c=2|the docs>"},
		{"[**bold** label](https://x.io)", "<https://x.io|bold label>"},
		{"[https://x.io](https://x.io)", "<https://x.io>"},
		{"[pipe|label](https://x.io/a|b)", "<https://x.io/a%7Cb|pipe|label>"},
		{"![diagram](https://x.io/d.png)", "<https://x.io/d.png|diagram>"},
		{"![](https://x.io/d.png)", "<https://x.io/d.png|image>"},
		{"[mail](mailto:a@b.c)", "<mailto:a@b.c|mail>"},
		{"[link](https://en.wikipedia.org/wiki/Go_(language)) after", "<https://en.wikipedia.org/wiki/Go_(language)|link> after"},
		{`[t](https://x.io "title")`, "<https://x.io|t>"},
		{"[rel](./file.md)", "rel (./file.md)"},
		{"[x](javascript:alert(1))", "x (javascript:alert(1))"},
		{"[empty]()", "empty"},
		{"[](relative)", "relative"},
		{"[not a link] (x)", "[not a link] (x)"},
		{"[unclosed](http://x", "[unclosed](http://x"},
		{"<https://auto.link/x>", "<https://auto.link/x>"},
		{"see https://x.io/**a**_b_ now", "see https://x.io/**a**_b_ now"},
		{"a < b && c > d", "a &lt; b &amp;&amp; c &gt; d"},
		{"`a < b` and `**not bold**`", "`a &lt; b` and `**not bold**`"},
		{"``code with ` tick``", "`code with ˋ tick`"},
		{"`` ` `` and ` `", "`ˋ` and ` `"},
		{"unmatched ` tick", "unmatched ` tick"},
		{"# Heading **one**", "*Heading one*"},
		{"### Third ###", "*Third*"},
		{"#", ""},
		{"#hashtag", "#hashtag"},
		{"* one\n- two\n+ three\n    * nested", "• one\n• two\n• three\n    • nested"},
		{"- [ ] todo\n- [x] done", "• ☐ todo\n• ☑ done"},
		{"1. first\n2) second", "1. first\n2) second"},
		{"---\n* * *\n___", "──────────\n──────────\n──────────"},
		{"> quoted **b**\n> > twice", "&gt; quoted *b*\n&gt; &gt; twice"},
		{"```go\nif a < b && c {\n\t**x**\n}\n```", "```\nif a &lt; b &amp;&amp; c {\n\t**x**\n}\n```"},
		{"~~~\ncode\n~~~", "```\ncode\n```"},
		{"  ```\n  indented\n    more\n  ```", "```\nindented\n  more\n```"},
		{"````\n```\ninner\n```\n````", "```\n``\u200b`\ninner\n``\u200b`\n```"},
		{"```\nnot closed", "```\nnot closed\n```"},
		{"inline ```x``` code", "inline `x` code"},
		{"runs ```` and `````", "runs ``\u200b`` and ``\u200b``\u200b`"},
		{"@here @channel @everyone @Here", "@\u200bhere @\u200bchannel @\u200beveryone @\u200bHere"},
		{"<!here> <!channel> <!everyone> <!subteam^S1|@devs> <@U123>", "&lt;!here&gt; &lt;!channel&gt; &lt;!everyone&gt; &lt;!subteam^S1|@devs&gt; &lt;@U123&gt;"},
		{"mail bob@here.com", "mail bob@here.com"},
		{"`@here` in code", "`@\u200bhere` in code"},
		{"[@here](https://x.io)", "<https://x.io|@\u200bhere>"},
		{"[ping](<!here>)", "ping (!here)"},
		{"tab\tand\r\nwindows\rmac\x00nul", "tab\tand\nwindows\nmacnul"},
		{"bad \xff utf8", "bad \uFFFD utf8"},
		{"private \uE000 \uE0010\uE001 runes", "private \uE000 \uE0010\uE001 runes"},
		// Block quotes (up to three spaces of indentation, with or without a
		// space after >) keep converting what they quote; four spaces make
		// code; a ``` info string cannot hold a backtick (a ~~~ one can);
		// private-use characters are text; brackets ending the line are text.
		{">quote", "&gt; quote"},
		{">\ttabbed", "&gt; tabbed"},
		{"> - item", "&gt; • item"},
		{"> # Title", "&gt; *Title*"},
		{">> twice", "&gt; &gt; twice"},
		{"   > three spaces", "&gt; three spaces"},
		{"    > four spaces", "```\n&gt; four spaces\n```"},
		{"```js`x\ncode", "``\u200b`js`x\ncode"},
		{"~~~ a`b\ncode\n~~~", "```\ncode\n```"},
		{"a \uE002b\uE002 c", "a \uE002b\uE002 c"},
		{"[just brackets]", "[just brackets]"},
		{"[a](b", "[a](b"},
		// A bare address is left as written (Slack links it), its *, _ and ~
		// not read as emphasis.
		{"see https://x.io", "see https://x.io"},
		{"(https://x.io)", "(https://x.io)"},
		{"xhttps://x.io/a_b_", "xhttps://x.io/a_b_"},
		{"_https://x.io/*a*", "_https://x.io/*a*"},
	} {
		if got := toMrkdwn(c.in); got != c.want {
			t.Errorf("toMrkdwn(%q)\n got %q\nwant %q", c.in, got, c.want)
		}
	}
}

func TestPlainText(t *testing.T) {
	for _, c := range []struct {
		in, want string
		strip    bool
	}{
		{"<@U0BOT> what is &lt;b&gt; &amp; co?", "what is <b> & co?", true},
		{"hi <@U0BOT>", "hi @mnemo", false},
		{"<@U1|alice> and <@U2> in <#C1|general> or <#C2>", "@alice and @U2 in #general or #C2", true},
		{"<!here> <!channel> <!everyone> <!subteam^S1|@devs> <!subteam^S2> <!date^1|Feb 1>", "@here @channel @everyone @devs subteam^S2 Feb 1", true},
		{"<https://x.io|the site> <https://y.io> <https://z.io|https://z.io> <mailto:a@b.c|a@b.c>", "the site (https://x.io) https://y.io https://z.io a@b.c", true},
	} {
		if got := plainText(c.in, "U0BOT", "mnemo", c.strip); got != c.want {
			t.Errorf("plainText(%q) = %q; want %q", c.in, got, c.want)
		}
	}
}

// checkParts checks what every posted part must satisfy.
func checkParts(t *testing.T, parts []string, limit int) {
	t.Helper()
	for i, p := range parts {
		if !utf8.ValidString(p) {
			t.Fatalf("part %d is not valid UTF-8: %q", i, p)
		}
		if n := utf8.RuneCountInString(p); n > limit {
			t.Fatalf("part %d has %d characters > %d", i, n, limit)
		}
		if strings.TrimSpace(p) == "" {
			t.Fatalf("part %d is empty", i)
		}
		fences := 0
		for _, l := range strings.Split(p, "\n") {
			if l == fence {
				fences++
			} else if strings.Contains(l, fence) {
				t.Fatalf("part %d has ``` inside a line: %q", i, l)
			}
		}
		if fences%2 != 0 {
			t.Fatalf("part %d has unbalanced fences:\n%s", i, p)
		}
		checkNoPing(t, p, false)
	}
}

// checkNoPing: no bare @here & co., and no Slack control sequence but
// links (strict), or at least none that mentions anyone (a link cut in two
// by a tiny split limit is not one).
func checkNoPing(t *testing.T, s string, strict bool) {
	t.Helper()
	for i := 0; i < len(s); i++ {
		if s[i] != '<' {
			continue
		}
		rest := s[i+1:]
		link := strings.HasPrefix(rest, "http://") || strings.HasPrefix(rest, "https://") || strings.HasPrefix(rest, "mailto:")
		mention := strings.HasPrefix(rest, "!") || strings.HasPrefix(rest, "@") || strings.HasPrefix(rest, "#")
		if mention || strict && !link {
			t.Fatalf("control sequence survived at %d: %q", i, s)
		}
	}
	if loc := pingRE.FindStringIndex(s); loc != nil {
		t.Fatalf("ping survived: %q in %q", s[loc[0]:loc[1]], s)
	}
}

// content is text without fence lines and whitespace: splitting must
// keep it.
func content(s string) string {
	var b strings.Builder
	for _, l := range strings.Split(s, "\n") {
		if l != fence {
			b.WriteString(l)
		}
	}
	return strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) {
			return -1
		}
		return r
	}, b.String())
}

// contentOf is the content of several parts.
func contentOf(parts []string) string {
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(content(p))
	}
	return b.String()
}

func TestSplitMessage(t *testing.T) {
	para := strings.Repeat("word ", 150) // 750 characters
	var b strings.Builder
	for i := range 12 {
		b.WriteString(para + "\n")
		if i%3 == 2 {
			b.WriteString("\n")
		}
	}
	text := toMrkdwn(b.String())
	parts := split.Text(text, maxPartRunes)
	checkParts(t, parts, maxPartRunes)
	if len(parts) < 3 {
		t.Fatalf("%d parts", len(parts))
	}
	// Paragraph boundaries are preferred: each part but the last ends
	// where a blank line was.
	for i, p := range parts[:len(parts)-1] {
		if n := strings.Count(p, "\n") + 1; n%4 != 3 && n%4 != 0 {
			t.Errorf("part %d has %d lines; expected whole paragraphs", i, n)
		}
	}
	if contentOf(parts) != content(text) {
		t.Error("split lost text")
	}

	// A code block across the limit is closed and reopened.
	code := "intro\n```python\n" + strings.Repeat("print('a line of code that is long enough')\n", 200) + "```\nafter"
	parts = formatReply(code)
	checkParts(t, parts, maxPartRunes)
	if len(parts) < 3 {
		t.Fatalf("%d parts", len(parts))
	}
	for i, p := range parts {
		if i > 0 && i < len(parts)-1 && (!strings.HasPrefix(p, fence+"\n") || !strings.HasSuffix(p, "\n"+fence)) {
			t.Errorf("middle part %d does not reopen and close the block:\n%.80s…%s", i, p, p[len(p)-40:])
		}
	}
	if !strings.HasPrefix(parts[0], "intro\n```\n") || !strings.HasSuffix(parts[len(parts)-1], "```\nafter") {
		t.Errorf("first/last parts: %.40q … %q", parts[0], parts[len(parts)-1])
	}
	if contentOf(parts) != content(toMrkdwn(code)) {
		t.Error("split lost code")
	}

	// One huge line is cut at spaces, and without spaces anywhere.
	long := strings.Repeat("abcdefghij ", 1000)
	parts = formatReply(long)
	checkParts(t, parts, maxPartRunes)
	for _, p := range parts[:len(parts)-1] {
		if strings.HasPrefix(p, " ") || strings.HasSuffix(p, " ") || strings.Contains(p, "abcde\n") {
			t.Errorf("cut inside a word or left a space: %.20q…%q", p, p[len(p)-20:])
		}
	}
	parts = formatReply(strings.Repeat("é", 10000))
	checkParts(t, parts, maxPartRunes)
	if len(parts) != 3 {
		t.Errorf("%d parts", len(parts))
	}
	// Entities and links are not cut in half when it can be helped.
	parts = split.Text(strings.Repeat("x", 90)+"&amp;"+strings.Repeat("y", 100), 100)
	if !strings.HasSuffix(parts[0], "x") || !strings.HasPrefix(parts[1], "&amp;") {
		t.Errorf("entity cut: %q", parts)
	}
	parts = split.Text(strings.Repeat("x", 70)+"<https://x.io/aaaaaaaaaa|label>"+strings.Repeat("y", 100), 100)
	if !strings.HasPrefix(parts[1], "<https://") {
		t.Errorf("link cut: %q", parts)
	}

	// An opening fence does not end a part; blank and fence-only parts
	// are dropped; a tiny limit still makes progress.
	text = strings.Repeat("a", 80) + "\n```\n" + strings.Repeat("b", 80) + "\n```"
	parts = split.Text(text, 100)
	checkParts(t, parts, 100)
	if parts[0] != strings.Repeat("a", 80) {
		t.Errorf("parts %q", parts)
	}
	if got := split.Text("\n\n```\n\n```\n\n", 100); len(got) != 0 {
		t.Errorf("blank parts: %q", got)
	}
	parts = split.Text(strings.Repeat("z", 50), 1)
	checkParts(t, parts, 16)
	if len(formatReply("")) != 0 {
		t.Error("empty text has parts")
	}
}

func FuzzFormat(f *testing.F) {
	for _, s := range []string{
		"hello **world**", "```go\ncode\n```", "```\nunclosed", "@here <!channel> <!subteam^S1|x>",
		"[a](https://b) ![c](http://d) <https://e>", "# h\n- a\n* b\n> q\n---",
		strings.Repeat("line of text\n", 400), "```\n" + strings.Repeat("x ", 3000) + "\n```",
		"a ```b``` c ```` d", "~~~\n```\n~~~", "&amp; < > &", "`` ` ``", "\xff\x00\uE000",
	} {
		f.Add(s, 0)
	}
	f.Fuzz(func(t *testing.T, md string, small int) {
		parts := formatReply(md)
		checkParts(t, parts, maxPartRunes)
		out := toMrkdwn(md)
		if strings.TrimSpace(out) != "" {
			checkParts(t, []string{out}, 1<<30)
			checkNoPing(t, out, true)
		}
		if contentOf(parts) != content(out) {
			t.Fatalf("split lost text of %q", md)
		}
		limit := 16 + (small&0xff)*3 // small limits stress the splitter
		checkParts(t, split.Text(out, limit), limit)
	})
}

// TestFormatIsLinear: pathological model output does not stall a reply.
func TestFormatIsLinear(t *testing.T) {
	// Not a speed figure: a guard against quadratic (or worse) blow-up on
	// hostile model output. Four times the input must take well under the
	// 16 times a quadratic pass would; both sizes are timed in the same run,
	// so a slow machine slows both alike.
	// CPU time of this thread, not wall time: other processes share the
	// machine. (The garbage collector's own threads are not counted.)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	timed := func(in string) time.Duration {
		start := threadCPU()
		parts := formatReply(in)
		d := threadCPU() - start
		checkParts(t, parts, maxPartRunes)
		return d
	}
	for _, unit := range []string{"[", "](", "<", "`", "``` ", "> ", "*", "**a ", "_", "~~", "@here ", "![x](", "&", "h", " ", "\n", "```\n",
		"[x](", "1. ", "> - ", "<a ", "*a", "_a", "*a\n", "`a\n"} {
		small, large := strings.Repeat(unit, 25000/len(unit)), strings.Repeat(unit, 100000/len(unit))
		// The fastest of three each, taken in turns.
		ts, tl := time.Duration(1<<63-1), time.Duration(1<<63-1)
		for range 3 {
			ts, tl = min(ts, timed(small)), min(tl, timed(large))
		}
		if tl > 10*ts && tl > 200*time.Millisecond {
			t.Errorf("%q: 4 times the input took %.0f times as long (%v vs %v): not linear", unit, float64(tl)/float64(ts), tl, ts)
		}
	}
}
