package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mnemo-agent/mnemo/agent/openaitest"
)

// streamFigures is one streaming row: replies a scripted model streams
// at one word per WordEvery, shown on Platform.
type streamFigures struct {
	Platform     string // "console" (the terminal, piped)
	Replies      int
	Words        int
	WordEvery    time.Duration
	FirstToken   Latency       // message sent → the model's first word sent (the fake records it), ms
	FirstVisible Latency       // message sent → the first word read from mnemo, ms
	Added        Latency       // FirstVisible − FirstToken of each reply: what mnemo adds, ms
	Whole        Latency       // message sent → the whole reply read, ms
	CPUPerReply  time.Duration // mnemo's CPU per streamed reply
}

// storyWord ends a message the stream model answers slowly.
const storyWord = "story"

// streamModel is the bench's streaming model: a message with storyWord
// is answered with words words, one every every (the first after every,
// as a model's first token); anything else at once. It keeps the
// sequence number of the last slow request, to find its chunks.
type streamModel struct {
	srv   *openaitest.Server
	words int
	every time.Duration
	story atomic.Int64 // Request.Seq of the last slow answer
}

func newStreamModel(words int, every time.Duration) *streamModel {
	m := &streamModel{srv: openaitest.NewServer(), words: words, every: every}
	m.srv.Handle(m.reply)
	return m
}

// storyText is the slow answer: benchReply and then words-1 more words.
func storyText(words int) string {
	w := []string{benchReply}
	for i := 1; i < words; i++ {
		w = append(w, fmt.Sprintf("word%d", i))
	}
	return strings.Join(w, " ") + "."
}

func (m *streamModel) reply(r openaitest.Request) (openaitest.Reply, bool) {
	switch {
	case strings.Contains(r.System(), "memory reflector"):
		return openaitest.Text("Nothing worth remembering."), true
	case strings.Contains(r.LastUser(), storyWord):
		m.story.Store(int64(r.Seq))
		return openaitest.Text(storyText(m.words)).WithWordDelay(m.every), true
	}
	return openaitest.Text(benchReply + " ok"), true
}

// firstWord is when the model sent the first word of request seq.
func (m *streamModel) firstWord(seq int64) (time.Time, bool) {
	for _, c := range m.srv.Chunks() {
		if int64(c.Request) == seq && c.Kind == "text" {
			return c.Time, true
		}
	}
	return time.Time{}, false
}

// consoleStream measures `mnemo chat`, piped, showing replies streamed by
// the model: for each, when the model sent its first word and when the
// first word came out of mnemo, and mnemo's CPU per reply.
func (b *bencher) consoleStream(ctx context.Context, replies, words int, every time.Duration) (streamFigures, error) {
	f := streamFigures{Platform: "console", Replies: replies, Words: words, WordEvery: every}
	m := newStreamModel(words, every)
	defer m.srv.Close()
	dir, err := b.fresh("stream-console")
	if err != nil {
		return f, err
	}
	mem := filepath.Join(dir, "data", "memory")
	if err := seed(ctx, mem, 1, 20, time.Now()); err != nil {
		return f, err
	}
	env := childEnv(dir, "OPENAI_BASE_URL="+m.srv.URL(), "OPENAI_API_KEY=sk-bench", "MNEMO_DATA_DIR="+mem)
	c, err := startChat(ctx, b.bin, dir, env, userName(0))
	if err != nil {
		return f, err
	}
	if _, err := c.say("hello"); err != nil { // the start is not measured
		return f, c.fail(err)
	}
	if err := settle(ctx, c.proc.Pid); err != nil {
		return f, c.fail(err)
	}
	cpu0 := procCPU(c.proc.Pid)
	var first, visible, added, whole []time.Duration
	want := storyText(words)
	for i := range replies {
		m.srv.DiscardRequests()
		t0 := time.Now()
		if _, err := io.WriteString(c.in, fmt.Sprintf("tell me a %s, part %d\n", storyWord, i+1)); err != nil {
			return f, c.fail(err)
		}
		b0, err := c.out.ReadByte()
		tv := time.Since(t0)
		if err != nil {
			return f, c.fail(fmt.Errorf("no reply: %w", err))
		}
		rest, err := c.out.ReadString('\n')
		tw := time.Since(t0)
		if err != nil {
			return f, c.fail(fmt.Errorf("the reply broke off: %w", err))
		}
		if got := strings.TrimSpace(string(b0) + rest); got != want {
			return f, c.fail(fmt.Errorf("the reply was %q, not the model's %q", got, want))
		}
		sent, ok := m.firstWord(m.story.Load())
		if !ok {
			return f, c.fail(fmt.Errorf("the model did not record its first word"))
		}
		first = append(first, sent.Sub(t0))
		visible = append(visible, tv)
		added = append(added, tv-sent.Sub(t0))
		whole = append(whole, tw)
	}
	cpu1 := procCPU(c.proc.Pid)
	if _, err := c.finish(); err != nil {
		return f, err
	}
	f.FirstToken, f.FirstVisible, f.Added, f.Whole = distribution(first), distribution(visible), distribution(added), distribution(whole)
	f.CPUPerReply = (cpu1 - cpu0) / time.Duration(replies)
	return f, nil
}

// renderStream is the streaming table.
func renderStream(b *strings.Builder, rows []streamFigures) {
	if len(rows) == 0 {
		return
	}
	r0 := rows[0]
	fmt.Fprintf(b, "\nStreaming: the scripted model streams a %d-word reply at one word per %v; the first word comes %v after the request. ", r0.Words, r0.WordEvery, r0.WordEvery)
	b.WriteString("Times are from the message sent; \"added\" is mnemo's first visible word less the model's first word sent, per reply (the goal: at most 50 ms in the terminal).\n\n")
	b.WriteString("| streamed reply | replies | model first word p50 | first visible p50 | added p50 | added max | whole reply p50 | mnemo CPU / streamed reply |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		name := r.Platform
		if name == "console" {
			name = "`mnemo chat` (terminal, piped)"
		}
		fmt.Fprintf(b, "| %s | %d | %s | %s | %s | %s | %s | %s |\n", name, r.Replies, msText(r.FirstToken.P50), msText(r.FirstVisible.P50),
			msText(r.Added.P50), msText(r.Added.Max), msText(r.Whole.P50), durText(r.CPUPerReply))
	}
}
