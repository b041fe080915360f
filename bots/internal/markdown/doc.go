// Package markdown renders the model's Markdown for a chat platform: Slack
// mrkdwn (Slack) or the Markdown Discord shows (Discord). It owns nothing
// else: splitting a rendered reply into messages is split.Text, which runs
// after rendering and relies on what both renderers guarantee — every code
// block is fenced with backtick lines of their own at the start of a line.
//
// The text is parsed once into a CommonMark (plus GitHub tables,
// strikethrough, task lists and bare links) syntax tree by
// github.com/yuin/goldmark and written out for the target, so code spans
// and blocks are never touched by the emphasis or link rules. goldmark is
// quadratic on some hostile input; per-line and per-paragraph budgets
// (parse.go) keep rendering linear, at the price of showing as text what
// no model writes: more than 64 links, code spans or tags of a kind on one
// line, 512 emphasis runs in a paragraph, 32 nested quotes or lists, or a
// link target of over 2 KB without a space.
//
// Slack: **bold** and __bold__ → *bold*, *italic* → _italic_, ~~strike~~ →
// ~strike~, [text](url) → <url|text> (other targets "text (target)"),
// headings → a bold line, bullets → "• ", task boxes → ☐/☑, rules → a line,
// tables → an aligned code block. &, < and > are escaped everywhere, code
// included, as Slack requires, so no <!here>-style control sequence can be
// written; @here, @channel and @everyone get a zero-width space, and a run
// of three backticks outside a fence line gets one too.
//
// Discord renders most Markdown itself; the renderer changes only what it
// shows differently: __bold__ (underline on Discord) → **bold**, headings
// beyond ### and setext headings, images, task boxes, rules, tables, ~~~ and
// indented code blocks (fenced with backticks), links whose target is not
// a web address. Text is otherwise written as it came (backslash escapes
// and Discord's own syntax such as ||spoilers|| included). Pings are
// stopped by allowed_mentions, not here.
package markdown
