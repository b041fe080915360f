package main

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/mnemo-agent/mnemo/agent/openaitest"
)

// The soak's scripted model. The Thinker answers every message with its
// token (and reads facts/soak.md first for every third message); the
// reflector appends one episode entry naming every turn it reflected and
// adds one line to facts/soak.md by memory_read then memory_write, reading
// again after a conflict and falling back to memory_patch once it has read
// twice (the agent loop refuses a third identical call). What the
// reflector was told to write is recorded, so the files can be checked at
// the end.

const (
	soakFactPath   = "facts/soak.md"
	soakFactAnchor = "> Summary: soak facts\n"
	soakFactSeed   = "# Soak Facts\n\n" + soakFactAnchor + "\n- Seeded: yes\n"
	soakEntryHead  = "## Soak reflection "
	soakFactHead   = "- Reflection "
	soakTurnsHead  = "- Turns: "
	soakAnswerHead = "Answer to "
)

var (
	soakTokenRe = regexp.MustCompile(`soak-u\d{3}-m\d{5}`)
	soakUserRe  = regexp.MustCompile(`Memory of user "([^"]+)"`)
	soakDateRe  = regexp.MustCompile(`Today's date: ((\d{4}-\d{2})-\d{2})`)
)

// soakRun is one reflection as the model scripted it.
type soakRun struct {
	seq      int      // 0, 1, … in the order the runs started
	user, id string   // id: the token of its first turn
	tokens   []string // every turn it reflected, in order
	appended bool     // memory_append succeeded
	factDone bool     // the fact line was written (memory_write or memory_patch)
	gaveUp   string   // why the fact line or the entry could not be written
}

// soakModel answers the fake model server's requests.
type soakModel struct {
	human      *soakHuman
	forceEvery int // every forceEvery-th reflection gets a person's edit between its read and its write

	thinker, reflector atomic.Int64 // requests
	forced             atomic.Int64 // edits made between a reflection's read and its write
	conflicts          atomic.Int64 // memory_write answered with a conflict
	patches            atomic.Int64 // fact lines written by memory_patch after two conflicts
	torn               atomic.Int64 // memory_read results cut short by a person's save in place (-soak.free)
	unexpected         atomic.Int64 // requests the script could not make sense of

	mu       sync.Mutex
	waiting  map[string]chan struct{} // token → closed once the Thinker answered it
	answered map[string]int           // token → tasks the Thinker started for it
	runs     map[string]*soakRun      // by id, and id+"#2"… for a batch reflected again
	order    []*soakRun
	holding  map[string]bool // memory user → the model holds the user's save lock
	problems []string
}

func newSoakModel(h *soakHuman, forceEvery int) *soakModel {
	return &soakModel{human: h, forceEvery: forceEvery, waiting: map[string]chan struct{}{},
		answered: map[string]int{}, runs: map[string]*soakRun{}, holding: map[string]bool{}}
}

// expect returns a channel closed once the Thinker has answered token.
func (m *soakModel) expect(token string) <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	ch := make(chan struct{})
	m.waiting[token] = ch
	return ch
}

func (m *soakModel) problem(format string, args ...any) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.problems = append(m.problems, fmt.Sprintf(format, args...))
}

func (m *soakModel) handle(r openaitest.Request) (openaitest.Reply, bool) {
	if strings.Contains(r.System(), "memory reflector") {
		m.reflector.Add(1)
		return m.reflect(r.Chat.Messages), true
	}
	m.thinker.Add(1)
	return m.think(r), true
}

// think answers the message whose token is in the last user message; for
// every third message it reads facts/soak.md first, while people edit it.
func (m *soakModel) think(r openaitest.Request) openaitest.Reply {
	msgs := r.Chat.Messages
	token := soakTokenRe.FindString(r.LastUser())
	if token == "" || len(msgs) == 0 {
		m.unexpected.Add(1)
		return openaitest.Text("?")
	}
	if msgs[len(msgs)-1].Role == "user" {
		m.mu.Lock()
		m.answered[token]++
		m.mu.Unlock()
		var n int
		fmt.Sscanf(token[len(token)-5:], "%d", &n)
		if n%3 == 0 {
			return openaitest.ToolCalls(openaitest.Call("memory_read", `{"path":"`+soakFactPath+`"}`))
		}
	}
	m.mu.Lock()
	if ch, ok := m.waiting[token]; ok {
		close(ch)
		delete(m.waiting, token)
	}
	m.mu.Unlock()
	return openaitest.Text(soakAnswerHead + token + ".")
}

// A reflection's memory tool calls run between the model's answer that
// asks for them and the run's next request. The model holds the user's save
// lock (soakHuman.lock) meanwhile, so that a person's save never lands in
// the middle of one of the store's writes: see soakHuman.

func (m *soakModel) hold(user string) {
	l := m.human.lock(user)
	l.Lock()
	m.mu.Lock()
	m.holding[user] = true
	m.mu.Unlock()
}

func (m *soakModel) release(user string) {
	m.mu.Lock()
	held := m.holding[user]
	delete(m.holding, user)
	m.mu.Unlock()
	if held {
		m.human.lock(user).Unlock()
	}
}

// toolResult is one memory tool call of the run so far and its result.
type toolResult struct {
	name   string
	args   string
	result string
}

func (t toolResult) failed() bool { return strings.HasPrefix(t.result, "error") }

func history(msgs []openaitest.Message) []toolResult {
	var out []toolResult
	index := map[string]int{}
	for _, msg := range msgs {
		switch msg.Role {
		case "assistant":
			for _, c := range msg.ToolCalls {
				index[c.ID] = len(out)
				out = append(out, toolResult{name: c.Function.Name, args: c.Function.Arguments})
			}
		case "tool":
			if i, ok := index[msg.ToolCallID]; ok {
				out[i].result = msg.Content
			}
		}
	}
	return out
}

func toolArgs(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// reflect scripts one step of a reflection from the run's messages.
func (m *soakModel) reflect(msgs []openaitest.Message) openaitest.Reply {
	if len(msgs) < 2 {
		m.unexpected.Add(1)
		return openaitest.Text("nothing to remember")
	}
	head := msgs[1].Content
	user, date := soakUserRe.FindStringSubmatch(head), soakDateRe.FindStringSubmatch(head)
	if user == nil || date == nil {
		m.unexpected.Add(1)
		return openaitest.Text("nothing to remember")
	}
	m.release(user[1]) // the previous step's tool calls have run
	run := m.run(user[1], head, len(msgs) == 2)
	if run == nil {
		m.unexpected.Add(1)
		return openaitest.Text("nothing to remember")
	}
	if last := msgs[len(msgs)-1]; len(msgs) > 2 && last.Role == "user" {
		// The loop stopped (steps or repeats) and asks for the answer.
		m.finish(run, "the tool loop was stopped: "+last.Content)
		return openaitest.Text("stopped")
	}
	calls := m.nextCalls(run, date[1], date[2], history(msgs))
	if len(calls) == 0 {
		m.finish(run, "")
		return openaitest.Text("saved")
	}
	m.hold(run.user)
	return openaitest.ToolCalls(calls...)
}

// run finds (or, at a run's first request, records) the run of head.
func (m *soakModel) run(user, head string, first bool) *soakRun {
	// The turns: the tokens of the conversation part (the stored memory
	// before it names earlier runs).
	_, conv, ok := strings.Cut(head, "# Conversation (quoted data")
	if !ok {
		return nil
	}
	var tokens []string
	seen := map[string]bool{}
	for _, t := range soakTokenRe.FindAllString(conv, -1) {
		if !seen[t] {
			seen[t] = true
			tokens = append(tokens, t)
		}
	}
	if len(tokens) == 0 {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	id := tokens[0]
	if !first {
		// The newest run of this batch.
		for i := len(m.order) - 1; i >= 0; i-- {
			if r := m.order[i]; r.user == user && r.tokens[0] == id {
				return r
			}
		}
		return nil
	}
	key := id
	for n := 2; m.runs[key] != nil; n++ {
		key = fmt.Sprintf("%s#%d", id, n) // reflected again: the check reports it
	}
	r := &soakRun{seq: len(m.order), user: user, id: key, tokens: tokens}
	m.runs[key] = r
	m.order = append(m.order, r)
	return r
}

func (m *soakModel) finish(r *soakRun, why string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !r.appended || !r.factDone {
		r.gaveUp = fmt.Sprintf("appended %v, fact written %v; %s", r.appended, r.factDone, why)
	}
}

// soakEntry is the episode entry of a run.
func soakEntry(r *soakRun, day string) string {
	return fmt.Sprintf("%s%s\n- Summary: soak turns %s\n- Date: %s\n%s%s\n",
		soakEntryHead, r.id, r.id, day, soakTurnsHead, strings.Join(r.tokens, " "))
}

// soakFactLine is the line a run adds to facts/soak.md.
func soakFactLine(r *soakRun) string {
	return fmt.Sprintf("%s%s: %d turns", soakFactHead, r.id, len(r.tokens))
}

// soakPatch adds the run's fact line under the summary line: the store
// applies it to the file as it is now.
func soakPatch(r *soakRun) openaitest.ToolCall {
	return openaitest.Call("memory_patch", toolArgs(map[string]any{"path": soakFactPath,
		"patches": []map[string]string{{"oldText": soakFactAnchor, "newText": soakFactAnchor + soakFactLine(r) + "\n"}}}))
}

// nextCalls decides the run's next tool calls from what it did so far.
func (m *soakModel) nextCalls(r *soakRun, day, month string, done []toolResult) []openaitest.ToolCall {
	var appends, reads int
	var lastFact *toolResult
	for i, c := range done {
		switch c.name {
		case "memory_append":
			appends++
			if !c.failed() {
				m.mu.Lock()
				r.appended = true
				m.mu.Unlock()
			}
		case "memory_read":
			reads++
			lastFact = &done[i]
		case "memory_write", "memory_patch":
			lastFact = &done[i]
			if !c.failed() {
				m.mu.Lock()
				r.factDone = true
				m.mu.Unlock()
			}
		}
	}
	var calls []openaitest.ToolCall
	readFact := func() {
		calls = append(calls, openaitest.Call("memory_read", toolArgs(map[string]string{"path": soakFactPath})))
	}
	// readAgainOrPatch reads the file a second time; after that, a third
	// identical memory_read would be refused as a repeat: it patches what
	// was read last, which the store re-applies on the current text.
	readAgainOrPatch := func() {
		if reads < 2 {
			readFact()
			return
		}
		m.patches.Add(1)
		calls = append(calls, soakPatch(r))
	}
	if !r.appended && appends < 2 {
		calls = append(calls, openaitest.Call("memory_append", toolArgs(map[string]string{
			"path": "episodes/" + month + ".md", "entry": soakEntry(r, day)})))
	}
	if r.factDone {
		return calls
	}
	switch {
	case lastFact == nil:
		readFact()
	case lastFact.name == "memory_read" && !lastFact.failed() && !strings.Contains(lastFact.result, soakFactAnchor):
		// Read while a person was saving it in place (-soak.free only):
		// the file was cut short. Read it again, or patch.
		m.torn.Add(1)
		readAgainOrPatch()
	case lastFact.name == "memory_read" && !lastFact.failed():
		if reads == 1 && m.forceEvery > 0 && r.seq%m.forceEvery == 0 {
			// A person saves the file now: after the read, before the write.
			style := soakStyles[(r.seq/m.forceEvery)%len(soakStyles)]
			if err := m.human.edit(r.user, soakFactPath, style, true); err != nil {
				m.problem("forced edit of %s/%s: %v", r.user, soakFactPath, err)
			} else {
				m.forced.Add(1)
			}
		}
		content := strings.TrimRight(lastFact.result, "\n") + "\n" + soakFactLine(r) + "\n"
		calls = append(calls, openaitest.Call("memory_write", toolArgs(map[string]string{"path": soakFactPath, "content": content})))
	case lastFact.name == "memory_write" && strings.Contains(lastFact.result, "changed on disk since it was read"):
		m.conflicts.Add(1)
		readAgainOrPatch()
	default:
		m.problem("reflection %s of %s: %s failed: %s", r.id, r.user, lastFact.name, lastFact.result)
	}
	return calls
}
