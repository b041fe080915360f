package agent

import (
	"container/list"
	"sync"

	"github.com/mnemo-agent/mnemo/agent/text"
)

// historyTextLimit bounds each stored text (bytes), so the short-term
// history's memory is bounded by MaxConversations × HistoryTurns × 2 of it.
const historyTextLimit = 8 << 10

const historyCut = "\n…(cut)"

// turn is one finished exchange of a conversation's short-term history.
type turn struct {
	User    string // memory user name of the speaker
	Speaker string // display name, may be empty
	Text    string // what the speaker said
	Reply   string // what the agent answered
}

// history keeps the last turns of each conversation in process memory,
// bounded per conversation (maxTurns) and overall (maxConvs: the
// conversation used least recently is dropped first). It is safe for
// concurrent use.
type history struct {
	maxTurns, maxConvs int

	mu    sync.Mutex
	convs map[string]*list.Element // values are *convTurns
	lru   *list.List               // front: most recently added to
}

type convTurns struct {
	key   string
	turns []turn
}

// newHistory returns a history keeping maxTurns turns of at most maxConvs
// conversations; maxTurns <= 0 keeps nothing, maxConvs <= 0 means one.
func newHistory(maxTurns, maxConvs int) *history {
	return &history{maxTurns: maxTurns, maxConvs: max(maxConvs, 1), convs: map[string]*list.Element{}, lru: list.New()}
}

// get returns a copy of conversation key's turns, oldest first.
func (h *history) get(key string) []turn {
	h.mu.Lock()
	defer h.mu.Unlock()
	e, ok := h.convs[key]
	if !ok {
		return nil
	}
	return append([]turn(nil), e.Value.(*convTurns).turns...)
}

// add appends t to conversation key, dropping its oldest turns past
// maxTurns and the least recently used conversations past maxConvs.
func (h *history) add(key string, t turn) {
	if h.maxTurns <= 0 {
		return
	}
	t.Text, t.Reply = capHistoryText(t.Text), capHistoryText(t.Reply)
	h.mu.Lock()
	defer h.mu.Unlock()
	e, ok := h.convs[key]
	if ok {
		h.lru.MoveToFront(e)
	} else {
		e = h.lru.PushFront(&convTurns{key: key})
		h.convs[key] = e
	}
	c := e.Value.(*convTurns)
	c.turns = append(c.turns, t)
	if over := len(c.turns) - h.maxTurns; over > 0 {
		// Copy rather than reslice, so the dropped turns can be freed.
		c.turns = append([]turn(nil), c.turns[over:]...)
	}
	for h.lru.Len() > h.maxConvs {
		old := h.lru.Back()
		h.lru.Remove(old)
		delete(h.convs, old.Value.(*convTurns).key)
	}
}

// forgetUser removes every turn spoken by user from all conversations and
// reports how many it removed.
func (h *history) forgetUser(user string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for e := h.lru.Front(); e != nil; {
		next := e.Next()
		c := e.Value.(*convTurns)
		kept := c.turns[:0]
		for _, t := range c.turns {
			if t.User == user {
				n++
				continue
			}
			kept = append(kept, t)
		}
		clear(c.turns[len(kept):])
		c.turns = kept
		if len(kept) == 0 {
			h.lru.Remove(e)
			delete(h.convs, c.key)
		}
		e = next
	}
	return n
}

// clearConversation drops conversation key's turns.
func (h *history) clearConversation(key string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if e, ok := h.convs[key]; ok {
		h.lru.Remove(e)
		delete(h.convs, key)
	}
}

// capHistoryText cuts s to historyTextLimit bytes at a rune boundary.
func capHistoryText(s string) string {
	if len(s) <= historyTextLimit {
		return s
	}
	return text.Cut(s, historyTextLimit-len(historyCut)) + historyCut
}
