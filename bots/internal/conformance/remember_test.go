package conformance

import (
	"context"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/bots/access"
	"github.com/mnemo-agent/mnemo/bots/internal/remember"
)

// Remember is the reference platform's Remember this: the flow every
// platform runs, with its own message's place and link.
func (b *refBot) Remember(text string, own, inChannel bool) Kept {
	m := remember.Message{User: b.MemoryUser(), Speaker: "u", Platform: "ref", Own: own, Text: text,
		Origin: mnemo.Origin{Place: "dm", Link: "https://ref.example/dm/1"}}
	if inChannel {
		m.Origin = mnemo.Origin{Place: "#c1", Link: "https://ref.example/c1/1"}
	}
	if !own {
		m.Author = "Ana"
	}
	f := &remember.Flow{Service: b.keeper, Access: b.gate, Platform: "ref", Log: b.log}
	ans := f.Keep(context.Background(), m, access.Who{Platform: "ref", User: "u"})
	undo := func(user string) func() string {
		return func() string {
			text, _ := f.Undo(user, ans.Undo)
			return text
		}
	}
	return Kept{Text: ans.Text, Undo: undo(b.MemoryUser()), UndoOther: undo("someone-else")}
}

var _ Keeping = (*refBot)(nil)
