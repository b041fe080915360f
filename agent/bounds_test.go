package agent

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/agent/openaitest"
)

func TestCutReply(t *testing.T) {
	note := cutNote(200)
	lines := strings.Repeat("a line of text\n", 40) // 600 characters
	words := strings.Repeat("word ", 100)
	tests := []struct {
		name, text string
		check      func(t *testing.T, got string)
	}{
		{"short", "hello", func(t *testing.T, got string) {
			if got != "hello" {
				t.Errorf("got %q", got)
			}
		}},
		{"exactly the limit", strings.Repeat("é", 200), func(t *testing.T, got string) {
			if got != strings.Repeat("é", 200) {
				t.Errorf("cut a reply of exactly the limit: %q", got)
			}
		}},
		{"at a line break", lines, func(t *testing.T, got string) {
			head := strings.TrimSuffix(got, note)
			if !strings.HasPrefix(lines, head+"\n") || !strings.HasSuffix(head, "a line of text") {
				t.Errorf("not cut at a line break: %q", got)
			}
		}},
		{"at a space", words, func(t *testing.T, got string) {
			head := strings.TrimSuffix(got, note)
			if !strings.HasPrefix(words, head+" ") || !strings.HasSuffix(head, "word") {
				t.Errorf("not cut at a space: %q", got)
			}
		}},
		{"one long word", strings.Repeat("日", 500), func(t *testing.T, got string) {
			if got != strings.Repeat("日", 200-utf8.RuneCountInString(note))+note {
				t.Errorf("got %q", got)
			}
		}},
		{"in a code block", "Here:\n```go\n" + strings.Repeat("x", 500), func(t *testing.T, got string) {
			head := strings.TrimSuffix(got, note)
			if !strings.HasSuffix(head, "x\n```") || openFence(head) != "" {
				t.Errorf("the code block is not closed before the note: %q", got)
			}
		}},
		{"in a tilde block", "~~~~\n" + words, func(t *testing.T, got string) {
			if !strings.HasSuffix(strings.TrimSuffix(got, note), "word\n~~~~") {
				t.Errorf("the tilde block is not closed: %q", got)
			}
		}},
		{"after a closed block", "```\ncode\n```\n" + words, func(t *testing.T, got string) {
			if strings.Count(got, "```") != 2 {
				t.Errorf("a closed block was closed again: %q", got)
			}
		}},
		{"not a fence", "```a`b\n" + words, func(t *testing.T, got string) {
			if strings.Count(got, "```") != 1 {
				t.Errorf("a line with backticks in its info string was taken for a fence: %q", got)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, cut := cutReply(tt.text, 200)
			if n := utf8.RuneCountInString(got); n > 200 {
				t.Errorf("%d characters, limit 200", n)
			}
			if cut != strings.HasSuffix(got, note) || cut != (got != tt.text) {
				t.Errorf("cut = %v for %q", cut, got)
			}
			tt.check(t, got)
		})
	}
	// A fence longer than the room for it: the text goes, the note stays.
	got, _ := cutReply(strings.Repeat("`", 150)+"\n"+words, 100)
	if got != cutNote(100) {
		t.Errorf("got %q", got)
	}
}

// Handle cuts a long answer to MaxReplyChars, logs it at warn, and
// remembers (history, OnTurn) what was sent.
func TestHandleCutsLongReply(t *testing.T) {
	var logs bytes.Buffer
	var turn mnemo.Turn
	a, srv := agentFixture(t, &fakeMemory{}, func(c *Config) {
		c.MaxReplyChars = 150
		c.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
		c.OnTurn = func(t mnemo.Turn) { turn = t }
	})
	long := strings.Repeat("Sentence number one is here. ", 40)
	srv.Enqueue(openaitest.Text(long), openaitest.Text("ok"))
	r := mustHandle(t, a, dmTask("tell me everything"))
	if n := utf8.RuneCountInString(r.Text); n > 150 || !strings.HasSuffix(r.Text, cutNote(150)) ||
		!strings.HasPrefix(long, strings.TrimSuffix(r.Text, cutNote(150))) {
		t.Fatalf("reply (%d characters): %q", n, r.Text)
	}
	if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "reply cut") ||
		!strings.Contains(logs.String(), "max_reply_chars=150") {
		t.Errorf("logs: %s", logs.String())
	}
	if turn.ReplyText != r.Text {
		t.Errorf("OnTurn got %q", turn.ReplyText)
	}
	mustHandle(t, a, dmTask("and?"))
	msgs := srv.Requests()[1].Chat.Messages
	if msgs[2].Role != "assistant" || msgs[2].Content != r.Text {
		t.Errorf("history holds %q", msgs[2].Content)
	}
}

func TestMaxReplyCharsDefaults(t *testing.T) {
	for in, want := range map[int]int{0: DefaultMaxReplyChars, -5: DefaultMaxReplyChars, 10: MinMaxReplyChars, 500: 500} {
		a, _ := agentFixture(t, &fakeMemory{}, func(c *Config) { c.MaxReplyChars = in })
		if a.cfg.MaxReplyChars != want {
			t.Errorf("MaxReplyChars %d → %d, want %d", in, a.cfg.MaxReplyChars, want)
		}
	}
	if DefaultMaxReplyChars != 16000 {
		t.Errorf("DefaultMaxReplyChars = %d", DefaultMaxReplyChars)
	}
}
