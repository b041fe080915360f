package thread

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mnemo-agent/mnemo"
)

func TestThreadContext(t *testing.T) {
	msgs := func(n int) []Message {
		var out []Message
		for i := range n {
			out = append(out, Message{AuthorID: "U4", Text: fmt.Sprint("m", i)})
		}
		return out
	}
	texts := func(cms []mnemo.ContextMessage) string {
		var s []string
		for _, c := range cms {
			s = append(s, c.Text)
		}
		return strings.Join(s, " ")
	}
	for _, c := range []struct {
		name      string
		msgs      []Message
		max, text int
		want      []mnemo.ContextMessage // exact, when set
		wantTexts string                 // else the texts, space-separated
	}{
		{name: "attribution", max: 20, text: 2000, msgs: []Message{
			{AuthorID: "U2", AuthorName: "Bob", Text: "Where do we deploy @mnemo?"},
			{AuthorID: "U1", AuthorName: "ignored", Text: "I think <staging>"},
			{AuthorID: "U0BOT", Self: true, Bot: true, Text: "Staging, per the runbook."},
			{AuthorID: "B9", Bot: true, Text: "CI passed"},
			{AuthorID: "B8", AuthorName: "Deploy\nBot\u202e", Bot: true, Text: "deployed"},
			{AuthorID: "U3", Text: "   "},
			{AuthorID: "U5", Text: "who am I"},
			{AuthorID: "U6", AuthorName: "Eve\u200b\nof\tIT", Text: "me"},
			{Text: "nobody"},
		}, want: []mnemo.ContextMessage{
			{Author: "Bob", Text: "Where do we deploy @mnemo?"},
			{Author: "Alice", Text: "I think <staging>", FromSpeaker: true},
			{Author: "mnemo (you, the assistant)", Text: "Staging, per the runbook."},
			{Author: "a bot (a bot)", Text: "CI passed"},
			{Author: "Deploy Bot (a bot)", Text: "deployed"},
			{Author: "user U5", Text: "who am I"},
			{Author: "Eve of IT", Text: "me"},
			{Author: "someone", Text: "nobody"},
		}},
		{name: "root and the last ones", msgs: msgs(30), max: 5, text: 100, wantTexts: "m0 m26 m27 m28 m29"},
		{name: "exactly max", msgs: msgs(5), max: 5, text: 100, wantTexts: "m0 m1 m2 m3 m4"},
		{name: "max one keeps the root", msgs: msgs(3), max: 1, text: 100, wantTexts: "m0"},
		{name: "max zero", msgs: msgs(3), max: 0, text: 100, wantTexts: ""},
		{name: "blank ones do not count", msgs: append(append(msgs(2), Message{Text: " "}, Message{Text: ""}), msgs(1)...),
			max: 3, text: 100, wantTexts: "m0 m1 m0"},
		{name: "long texts cut", msgs: []Message{{AuthorID: "U", Text: strings.Repeat("é", 30)}}, max: 3, text: 10,
			wantTexts: strings.Repeat("é", 10) + " […]"},
		{name: "maxText zero does not cut", msgs: []Message{{AuthorID: "U", Text: strings.Repeat("é", 30)}}, max: 3,
			wantTexts: strings.Repeat("é", 30)},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := Context(c.msgs, "U1", "Alice", "mnemo", c.max, c.text)
			if c.want != nil {
				if fmt.Sprint(got) != fmt.Sprint(c.want) {
					t.Errorf("context\n got %+v\nwant %+v", got, c.want)
				}
				return
			}
			if texts(got) != c.wantTexts {
				t.Errorf("texts %q; want %q", texts(got), c.wantTexts)
			}
		})
	}
	// The speaker without a name; no speaker id matches nobody.
	got := Context([]Message{{AuthorID: "U1", Text: "x"}, {Text: "y"}}, "U1", " ", "b", 5, 0)
	if got[0].Author != "the speaker" || !got[0].FromSpeaker || got[1].FromSpeaker {
		t.Errorf("context %+v", got)
	}
	got = Context([]Message{{Text: "x"}}, "", "S", "b", 5, 0)
	if got[0].FromSpeaker {
		t.Errorf("context %+v", got)
	}
	if n := utf8.RuneCountInString(Context(msgs(1), "", "", "", 1, MaxText)[0].Text); n != 2 {
		t.Errorf("%d", n)
	}
}
