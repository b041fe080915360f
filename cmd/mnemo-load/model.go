package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mnemo-agent/mnemo/agent/openaitest"
)

// entryMarker starts the title of every episode entry the fake reflector
// appends; the entry's id follows it.
const entryMarker = "## Load reflection "

var (
	todayRe = regexp.MustCompile(`Today's date: (\d{4}-\d{2})-\d{2}`)
	userRe  = regexp.MustCompile(`Memory of user "([^"]+)"`)
	turnsRe = regexp.MustCompile(`(\d+) turn\(s\)\.`)
)

// The fake model's answers: after reading facts/user.md, rememberPrefix and
// the name line; with no memory, nothingText.
const (
	rememberPrefix = "Here is what I remember: "
	nothingText    = "Noted. I have nothing about you in memory yet."
)

// modelAnswer reports whether text is one of the fake model's answers (not
// an apology or the adapter's busy reply).
func modelAnswer(text string) bool {
	return strings.HasPrefix(text, rememberPrefix) || text == nothingText
}

// fakeModel answers the fake server's requests like a model that uses
// memory, and counts what it was asked and what it asked for.
type fakeModel struct {
	srv     *openaitest.Server
	latency time.Duration

	thinkerCalls   atomic.Int64
	reflectorCalls atomic.Int64
	reads          atomic.Int64 // memory_read calls the Thinker was told to make
	reflections    atomic.Int64 // reflector runs (first calls)
	turns          atomic.Int64 // turns those runs covered
	appendErrors   atomic.Int64 // memory_append calls answered with an error
	unexpected     atomic.Int64 // requests the fake could not make sense of

	mu     sync.Mutex
	issued map[string]string // entry id → memory user it was appended for
}

func newFakeModel(srv *openaitest.Server, latency time.Duration) *fakeModel {
	return &fakeModel{srv: srv, latency: latency, issued: make(map[string]string)}
}

// reply is the server's handler: it answers every request.
func (f *fakeModel) reply(r openaitest.Request) (openaitest.Reply, bool) {
	f.srv.DiscardRequests() // a load run must not keep every request in memory
	var reply openaitest.Reply
	if strings.Contains(r.System(), "memory reflector") {
		f.reflectorCalls.Add(1)
		reply = f.reflect(r.Chat.Messages, r.LastUser())
	} else {
		f.thinkerCalls.Add(1)
		reply = f.think(r.Chat.Messages)
	}
	if f.latency > 0 {
		reply = reply.WithDelay(f.latency)
	}
	return reply, true
}

// think: at iteration 1 (the user's message last, the index before it) read
// facts/user.md when the index lists it; after the read, answer quoting it.
func (f *fakeModel) think(msgs []openaitest.Message) openaitest.Reply {
	n := len(msgs)
	switch {
	case n >= 2 && msgs[n-1].Role == "user":
		if strings.Contains(msgs[n-2].Content, "\n- facts/user.md (") {
			f.reads.Add(1)
			return openaitest.ToolCalls(openaitest.Call("memory_read", `{"path":"facts/user.md"}`))
		}
		return openaitest.Text(nothingText)
	case n >= 2 && msgs[n-1].Role == "tool":
		return openaitest.Text(rememberPrefix + nameLine(msgs[n-1].Content) + ". Let's go on.")
	}
	f.unexpected.Add(1)
	return openaitest.Text("?")
}

// nameLine is the "- Name: ..." line of a fact file's text.
func nameLine(text string) string {
	for line := range strings.Lines(text) {
		if strings.HasPrefix(line, "- Name: ") {
			return strings.TrimSpace(line)
		}
	}
	return "no name"
}

// reflect: at the run's first call append one entry, dated from the
// request's "Today's date", to that month's episode file; then say "saved".
func (f *fakeModel) reflect(msgs []openaitest.Message, lastUser string) openaitest.Reply {
	if len(msgs) != 2 { // after the append (or a nudge): the final answer
		if last := msgs[len(msgs)-1]; last.Role == "tool" && strings.HasPrefix(last.Content, "error") {
			f.appendErrors.Add(1)
		}
		return openaitest.Text("saved")
	}
	month, user, turns := todayRe.FindStringSubmatch(lastUser), userRe.FindStringSubmatch(lastUser), turnsRe.FindStringSubmatch(lastUser)
	if month == nil || user == nil || turns == nil {
		f.unexpected.Add(1)
		return openaitest.Text("nothing to remember")
	}
	n, _ := strconv.Atoi(turns[1])
	f.turns.Add(int64(n))
	id := fmt.Sprintf("%07d", f.reflections.Add(1))
	date := todayRe.FindString(lastUser)[len("Today's date: "):]
	f.mu.Lock()
	f.issued[id] = user[1]
	f.mu.Unlock()
	entry := fmt.Sprintf("%s%s\n- Summary: load run entry %s\n- Date: %s\n- Turns: %d reflected in this run\n",
		entryMarker, id, id, date, n)
	args, _ := json.Marshal(map[string]string{"path": "episodes/" + month[1] + ".md", "entry": entry})
	return openaitest.ToolCalls(openaitest.Call("memory_append", string(args)))
}

// issuedEntries is a copy of the entries the reflector was told to append.
func (f *fakeModel) issuedEntries() map[string]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return maps.Clone(f.issued)
}
