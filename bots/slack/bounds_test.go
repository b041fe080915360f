package slack

import (
	"fmt"
	"strings"
	"testing"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/bots/slack/slacktest"
)

// A reply of three times maxParts messages is posted as exactly maxParts
// messages, in order, the last one ending with cutNote. (Three times, not
// sixty: the adapter formats the whole reply, and 200,000 characters took
// over 10s under -race on a loaded machine, past the wait.)
func TestReplyAtMostFiveMessages(t *testing.T) {
	const size = 3 * maxParts * maxPartRunes
	var md strings.Builder
	for i := 0; md.Len() < size; i++ {
		fmt.Fprintf(&md, "Paragraph %d: %s\n\n", i, strings.Repeat("words and more words ", 20))
	}
	long := md.String()[:size]
	line := "fmt.Println(\"a line of code\")\n"
	tests := []struct {
		name, text string
	}{
		{"prose", long},
		// The cut falls inside a code block: the last message closes it
		// before the note.
		{"code", "```\n" + strings.Repeat(line, size/len(line)) + "```"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if n := len(formatReply(tt.text)); n <= maxParts {
				t.Fatalf("the reply splits into %d parts only", n)
			}
			hs := start(t, setup{})
			hs.h.SetReply(func(mnemo.Task) (mnemo.Reply, error) { return mnemo.Reply{Text: tt.text}, nil })
			env := hs.srv.AppMention(slacktest.AppMentionEvent{Channel: "C1", User: "U1"})
			// The adapter logs "replied" after its last post.
			waitFor(t, "the reply", func() bool { return strings.Contains(hs.logs.String(), `msg="slack: replied"`) })
			posts := hs.srv.Posts()
			if len(posts) != maxParts || !strings.Contains(hs.logs.String(), "parts=5") {
				t.Fatalf("%d posts; want %d", len(posts), maxParts)
			}
			want := formatReply(tt.text)
			var texts []string
			for i, p := range posts {
				if p.ThreadTS != env.TS || (i < maxParts-1 && p.Text != want[i]) {
					t.Errorf("post %d in %q: %.60q", i, p.ThreadTS, p.Text)
				}
				texts = append(texts, p.Text)
			}
			checkParts(t, texts, maxPartRunes)
			last := texts[maxParts-1]
			head, ok := strings.CutSuffix(last, cutNote)
			if !ok || !strings.HasPrefix(want[maxParts-1], strings.TrimSuffix(head, "\n"+fence)) {
				t.Errorf("last post does not end with the note after the start of part 5:\n%.200q\n…\n%q", last, last[max(0, len(last)-200):])
			}
			if !strings.Contains(hs.logs.String(), "reply cut") {
				t.Errorf("the cut was not logged")
			}
		})
	}
}

// Up to maxParts, a reply is posted whole, without the note.
func TestReplyOfFiveMessagesNotCut(t *testing.T) {
	var md strings.Builder
	for i := 0; len(formatReply(md.String())) < maxParts; i++ {
		fmt.Fprintf(&md, "Paragraph %d: %s\n\n", i, strings.Repeat("words ", 100))
	}
	want := formatReply(md.String())
	hs := start(t, setup{})
	hs.h.SetReply(func(mnemo.Task) (mnemo.Reply, error) { return mnemo.Reply{Text: md.String()}, nil })
	hs.srv.Message(slacktest.MessageEvent{Channel: "D1", User: "U1", Text: "tell me"})
	waitFor(t, "the reply", func() bool { return strings.Contains(hs.logs.String(), `msg="slack: replied"`) })
	posts := hs.srv.Posts()
	if len(posts) != maxParts {
		t.Fatalf("%d posts; want %d", len(posts), maxParts)
	}
	for i, p := range posts {
		if p.Text != want[i] {
			t.Errorf("post %d: %.60q; want %.60q", i, p.Text, want[i])
		}
	}
	if strings.Contains(hs.logs.String(), "reply cut") {
		t.Error("a reply of maxParts messages was cut")
	}
}
