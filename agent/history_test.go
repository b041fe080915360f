package agent

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"
)

func TestHistoryTurnsBound(t *testing.T) {
	h := newHistory(3, 10)
	if h.get("c") != nil {
		t.Error("unknown conversation has turns")
	}
	for i := range 5 {
		h.add("c", turn{User: "u", Text: fmt.Sprint("q", i), Reply: fmt.Sprint("a", i)})
	}
	got := h.get("c")
	if len(got) != 3 || got[0].Text != "q2" || got[2].Reply != "a4" {
		t.Errorf("turns = %+v", got)
	}
	got[0].Text = "changed"
	if h.get("c")[0].Text != "q2" {
		t.Error("get returned the stored slice")
	}
}

func TestHistoryConversationsBound(t *testing.T) {
	h := newHistory(2, 2)
	h.add("a", turn{Text: "1"})
	h.add("b", turn{Text: "2"})
	h.add("a", turn{Text: "3"}) // a is now the most recent
	h.add("c", turn{Text: "4"}) // drops b, the least recently used
	if h.size() != 2 || h.get("b") != nil || len(h.get("a")) != 2 || len(h.get("c")) != 1 {
		t.Errorf("size %d, a %v, b %v, c %v", h.size(), h.get("a"), h.get("b"), h.get("c"))
	}
	if len(h.convs) != h.lru.Len() {
		t.Errorf("map %d, list %d", len(h.convs), h.lru.Len())
	}
}

func TestHistoryDisabledAndMinimum(t *testing.T) {
	h := newHistory(0, 5)
	h.add("a", turn{Text: "x"})
	if h.size() != 0 || h.get("a") != nil {
		t.Error("a history of 0 turns kept one")
	}
	h = newHistory(1, 0)
	h.add("a", turn{Text: "x"})
	h.add("b", turn{Text: "y"})
	if h.size() != 1 || h.get("b") == nil {
		t.Errorf("maxConvs 0 keeps %d conversations", h.size())
	}
}

func TestHistoryForgetUserAndClear(t *testing.T) {
	h := newHistory(5, 5)
	h.add("dm-ada", turn{User: "ada", Text: "a1"})
	h.add("thread", turn{User: "ada", Text: "a2"})
	h.add("thread", turn{User: "bob", Text: "b1"})
	h.add("thread", turn{User: "ada", Text: "a3"})
	if n := h.forgetUser("ada"); n != 3 {
		t.Errorf("forgot %d turns", n)
	}
	if h.get("dm-ada") != nil || h.size() != 1 {
		t.Errorf("dm-ada %v, size %d", h.get("dm-ada"), h.size())
	}
	if got := h.get("thread"); len(got) != 1 || got[0].User != "bob" {
		t.Errorf("thread = %+v", got)
	}
	if n := h.forgetUser("nobody"); n != 0 {
		t.Errorf("forgot %d", n)
	}
	h.clearConversation("thread")
	h.clearConversation("unknown")
	if h.size() != 0 || len(h.convs) != 0 {
		t.Errorf("size after clear = %d", h.size())
	}
}

func TestHistoryCapsTexts(t *testing.T) {
	h := newHistory(2, 2)
	long := strings.Repeat("é", historyTextLimit) // 2 bytes each
	h.add("c", turn{Text: long, Reply: "short"})
	got := h.get("c")[0]
	if len(got.Text) > historyTextLimit || !strings.HasSuffix(got.Text, historyCut) || !utf8.ValidString(got.Text) {
		t.Errorf("capped text: %d bytes, valid %v, suffix %q", len(got.Text), utf8.ValidString(got.Text), got.Text[len(got.Text)-10:])
	}
	if got.Reply != "short" {
		t.Errorf("reply = %q", got.Reply)
	}
	exact := strings.Repeat("a", historyTextLimit)
	if capHistoryText(exact) != exact {
		t.Error("a text at the limit was cut")
	}
}

func TestHistoryConcurrent(t *testing.T) {
	h := newHistory(4, 8)
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			conv := fmt.Sprint("c", i%10)
			for j := range 50 {
				h.add(conv, turn{User: fmt.Sprint("u", i%3), Text: fmt.Sprint(j)})
				_ = h.get(conv)
				if j%10 == 0 {
					h.forgetUser("u0")
				}
			}
		})
	}
	wg.Wait()
	if h.size() > 8 {
		t.Errorf("size %d past the bound", h.size())
	}
	for k, e := range h.convs {
		if n := len(e.Value.(*convTurns).turns); n > 4 || n == 0 {
			t.Errorf("%s holds %d turns", k, n)
		}
	}
}

// size reports how many conversations hold turns.
func (h *history) size() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.lru.Len()
}
