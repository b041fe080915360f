package console

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/mnemo-agent/mnemo/bots/internal/bottest"
)

// Whatever keys arrive, in whatever pieces, the chat does not panic or
// hang, and what it sends is a message: not blank, no control characters
// but line ends (pasted tabs become spaces).
func FuzzKeys(f *testing.F) {
	for _, seed := range []string{
		"hi\r", "a\\\rb\r", "\"\"\"\rx\r\"\"\"\r", "\x1b[200~a\nb\x1b[201~\r", "\x03\x03", "ab\x1b[D\x1b[1~\x04\r",
		"\x1b[200~\x1b[200~\x03\r\x1b[201~\r", "\x1bO\x1b[1;5\x1b\x7f\r", "\xff\xfe\r", "\x1b[200~\t\x00x\r\n",
	} {
		f.Add(seed, uint8(3))
	}
	f.Fuzz(func(t *testing.T, keys string, cut uint8) {
		i := int(cut) % (len(keys) + 1)
		h := bottest.NewHandler()
		err := Run(context.Background(), Config{In: &chunked{parts: []string{keys[:i], keys[i:]}}, Out: io.Discard,
			Interactive: true, User: "a", Chat: chatOf(t, "a", h)})
		if err != nil {
			t.Fatalf("Run = %v", err)
		}
		for _, task := range h.Tasks() {
			if strings.TrimSpace(task.Text) == "" || strings.ContainsFunc(task.Text, func(r rune) bool { return r < 0x20 && r != '\n' || r == 0x7f }) {
				t.Errorf("sent %q", task.Text)
			}
		}
	})
}

// style keeps every line, and the text without its styles is the text
// less the Markdown marks it renders.
func FuzzStyle(f *testing.F) {
	for _, seed := range []string{"# T\n**b** *i* `c` [l](u)\n- x\n> q\n---\n```\ncode\n```", "****", "`*`*", "# ", "*a**b*"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, text string) {
		out := style(text)
		if strings.Count(out, "\n") != strings.Count(text, "\n") {
			t.Errorf("style(%q) = %q: lines changed", text, out)
		}
	})
}

// Whatever line is said, it is a command (answered without the model) or
// one message, never both; a forget deletes only when the line was the
// confirmation word, and only the speaker's memory; a line that does not
// begin with a command word always reaches the model.
func FuzzCommandWords(f *testing.F) {
	for _, seed := range []string{"/forget", "/forget yes", "/memory forget yes", "/memory forget all", "/forget facts/a.md",
		"/memory", "/memory share facts/a.md", "hello", "/forgetful", "/memory\nforget yes", " /forget  yes ", "/memory bogus"} {
		f.Add(seed, "/forget yes")
	}
	f.Fuzz(func(t *testing.T, first, second string) {
		h := bottest.NewHandler()
		mem := &bottest.Memory{}
		conv := chatOf(t, "ann", h, withMemory(mem))
		for _, text := range []string{first, second} {
			before := len(h.Tasks())
			if _, err := conv.Say(context.Background(), Line{ID: "l", Text: text}); err != nil {
				t.Fatal(err)
			}
			tasks := len(h.Tasks()) - before
			fields := strings.Fields(text)
			word := len(fields) > 0 && !strings.Contains(text, "\n") && (fields[0] == "/memory" || fields[0] == "/forget")
			if word && tasks != 0 || !word && tasks != 1 {
				t.Fatalf("%q: %d tasks", text, tasks)
			}
		}
		confirmed := func(text string) bool {
			f := strings.Fields(text)
			return !strings.Contains(text, "\n") && (len(f) == 2 && f[0] == "/forget" && f[1] == "yes" ||
				len(f) == 3 && f[0] == "/memory" && f[1] == "forget" && f[2] == "yes")
		}
		for _, got := range mem.Forgotten() {
			if !strings.HasPrefix(got, "ann:") || !confirmed(second) && !confirmed(first) {
				t.Fatalf("%q then %q forgot %q", first, second, got)
			}
		}
	})
}
