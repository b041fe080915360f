package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// toolFigures is one tool chat: Messages messages each making the Thinker
// call Tool once, on a memory of Files text files (MemoryBytes in all).
// The first of them is measured apart: a search builds the index there.
type toolFigures struct {
	Tool            string // memory_read or memory_search
	Files, Messages int
	MemoryBytes     int64
	CPUPerMsg       time.Duration // the child's CPU from the second tool message's start to the last reply, per message
	Wall            Latency       // the same messages, message written → reply read
	FirstCPU        time.Duration // the first tool message's
	FirstWall       time.Duration
	CallsPerMsg     float64 // model calls (Thinker) per tool message: 2, the call and the answer
	ReflectorCalls  int64
	ResultBytes     int   // a tool result's mean size
	Misses          int   // searches that found nothing
	StartRSS        int64 // VmHWM before the first tool message (after the start)
	FirstRSS        int64 // VmHWM after it
	MaxRSS          int64 // VmHWM after the last reply
}

// toolChats seeds one text memory of files files and measures on it a chat
// whose messages each read a file, then one whose messages each search,
// messages tool messages each (after a first casual one, the start).
func (b *bencher) toolChats(ctx context.Context, files, messages int) ([]toolFigures, error) {
	m := newBenchModel(0)
	defer m.close()
	dir, err := b.fresh(fmt.Sprintf("tools-%d", files))
	if err != nil {
		return nil, err
	}
	mem, env := chatEnv(dir, m)
	tm, err := seedText(ctx, mem, files, time.Now())
	if err != nil {
		return nil, err
	}
	var out []toolFigures
	for _, tool := range []string{"memory_read", "memory_search"} {
		f, err := b.toolChat(ctx, dir, env, m, tm, tool, messages)
		if err != nil {
			return out, fmt.Errorf("%s on each message: %w", tool, err)
		}
		out = append(out, f)
	}
	return out, nil
}

// toolChat measures one tool chat on tm (seeded in dir).
func (b *bencher) toolChat(ctx context.Context, dir string, env []string, m *benchModel, tm *textMemory, tool string, messages int) (toolFigures, error) {
	f := toolFigures{Tool: tool, Files: tm.files, Messages: messages, MemoryBytes: tm.bytes}
	m.reset()
	c, err := startChat(ctx, b.bin, dir, env, userName(0), "--verbose")
	if err != nil {
		return f, err
	}
	baselineDone := c.stderr.baselineDone()
	// The start, as in chatAtSize: a casual message, the history's
	// baseline, idle.
	if _, err := c.say(messageText(0, messages+1)); err != nil {
		return f, c.fail(err)
	}
	if err := waitFor(ctx, baselineDone, baselineMax); err != nil {
		return f, c.fail(fmt.Errorf("the history's baseline: %w", err))
	}
	if err := settle(ctx, c.proc.Pid); err != nil {
		return f, c.fail(err)
	}
	m.reset()
	pid := c.proc.Pid
	f.StartRSS = vmHWM(pid)
	cpu0 := procCPU(pid)
	d, err := c.say(tm.message(tool, 0, messages))
	if err != nil {
		return f, c.fail(err)
	}
	f.FirstCPU, f.FirstWall, f.FirstRSS = procCPU(pid)-cpu0, d, vmHWM(pid)
	if err := settle(ctx, pid); err != nil {
		return f, c.fail(err)
	}
	cpu1 := procCPU(pid)
	var lat []time.Duration
	for i := 1; i < messages; i++ {
		d, err := c.say(tm.message(tool, i, messages))
		if err != nil {
			return f, c.fail(err)
		}
		lat = append(lat, d)
	}
	cpu2 := procCPU(pid)
	f.MaxRSS = vmHWM(pid)
	if _, err := c.finish(); err != nil {
		return f, err
	}
	f.CPUPerMsg = (cpu2 - cpu1) / time.Duration(messages-1)
	f.Wall = distribution(lat)
	f.CallsPerMsg = float64(m.thinker.Load()) / float64(messages)
	f.ReflectorCalls = m.reflector.Load()
	t := m.toolCounts()
	if t.errors > 0 {
		return f, fmt.Errorf("%d of %d %s results were errors, the first: %.300s", t.errors, t.results, tool, t.firstError)
	}
	if t.calls != messages || t.results != messages {
		return f, fmt.Errorf("the model called %s %d times and got %d results for %d messages", tool, t.calls, t.results, messages)
	}
	f.ResultBytes, f.Misses = t.bytes/max(t.results, 1), t.misses
	return f, nil
}

// textMemory is a seeded memory of text: its files, their bytes, and the
// words they were written with, for the tool messages.
type textMemory struct {
	files int
	bytes int64
	paths []string // every file, as memory_read names it
	vocab []string
}

// Text memory: the vocabulary's size, the Zipf law's exponent (as in
// memory/search's benchmarks) and the words of a line of text.
const (
	textVocab = 4000
	textZipf  = 1.1
	lineWords = 40
)

// seedText writes files memory files of text for the bench's one user,
// straight to disk as seed does (half fact files, half episode months,
// an hour old): a fact file holds 5 "- Key: value" lines, an episode file
// 5 entries of a title, a summary, a date in its month and 2 detail
// lines; every summary, value and detail is about lineWords words drawn
// with a Zipf law from a vocabulary of textVocab made-up words (fixed
// seeds: the same memory each run), about 3 KB a file.
func seedText(ctx context.Context, memDir string, files int, now time.Time) (*textMemory, error) {
	r := rand.New(rand.NewPCG(24, 1))
	tm := &textMemory{files: files, vocab: vocabulary(r, textVocab)}
	zipf := rand.NewZipf(r, textZipf, 1, uint64(len(tm.vocab)-1))
	words := func(k int) string {
		ws := make([]string, k)
		for i := range ws {
			ws[i] = tm.vocab[zipf.Uint64()]
		}
		return strings.Join(ws, " ")
	}
	line := func() string { return words(lineWords - 5 + r.IntN(11)) } // 35 to 45 words
	dir := filepath.Join(memDir, userName(0))
	for _, sub := range []string{"facts", "episodes"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o700); err != nil {
			return nil, fmt.Errorf("seed memory: %w", err)
		}
	}
	episodes := files / 2
	for k := range files - episodes {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		name, text := "facts/user.md", userFacts(0)
		if k > 0 {
			var b strings.Builder
			fmt.Fprintf(&b, "# %s\n\n> Summary: %s\n\n", capital(words(3)), words(8))
			for range 5 {
				fmt.Fprintf(&b, "- %s: %s\n", capital(words(1)), line())
			}
			name, text = fmt.Sprintf("facts/topic-%04d.md", k), b.String()
		}
		if err := tm.write(dir, name, text, now); err != nil {
			return nil, err
		}
	}
	for k := range episodes {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		month := time.Date(now.Year(), now.Month()-time.Month(k), 1, 0, 0, 0, 0, time.UTC)
		var b strings.Builder
		fmt.Fprintf(&b, "# %s Episodes\n\n> Summary: %s\n", month.Format("2006-01"), words(10))
		for e := range 5 {
			fmt.Fprintf(&b, "\n## %s\n- Summary: %s\n- Date: %s\n- Solution: %s\n- Notes: %s\n",
				capital(words(4)), line(), month.AddDate(0, 0, 1+6*e).Format(time.DateOnly), line(), line())
		}
		if err := tm.write(dir, "episodes/"+month.Format("2006-01")+".md", b.String(), now); err != nil {
			return nil, err
		}
	}
	return tm, nil
}

func (tm *textMemory) write(dir, name, text string, now time.Time) error {
	if err := writeSeed(filepath.Join(dir, filepath.FromSlash(name)), text, now); err != nil {
		return err
	}
	tm.paths = append(tm.paths, name)
	tm.bytes += int64(len(text))
	return nil
}

// vocabulary is n distinct made-up words of three or four syllables (no
// English stop word among them), in the order drawn: the first is the
// most frequent.
func vocabulary(r *rand.Rand, n int) []string {
	const consonants, vowels = "bdfgklmnprstvz", "aeiou"
	seen := make(map[string]bool, n)
	out := make([]string, 0, n)
	for len(out) < n {
		var b strings.Builder
		for range 3 + r.IntN(2) {
			b.WriteByte(consonants[r.IntN(len(consonants))])
			b.WriteByte(vowels[r.IntN(len(vowels))])
		}
		if w := b.String(); !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	return out
}

// capital is s with its first letter upper case.
func capital(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// message is the i-th (from 0) of n tool messages: for memory_search a
// query of three words of the vocabulary (one frequent, two of the rest),
// for memory_read the path of a file; each message its own, the same each
// run.
func (tm *textMemory) message(tool string, i, n int) string {
	r := rand.New(rand.NewPCG(uint64(i), 7))
	head := fmt.Sprintf("Message %d of %d. ", i+1, n)
	if tool == "memory_read" {
		return head + readMarker + " " + tm.paths[r.IntN(len(tm.paths))]
	}
	v := tm.vocab
	q := []string{v[r.IntN(min(50, len(v)))]}
	for range 2 {
		q = append(q, v[r.IntN(len(v))])
	}
	return head + searchMarker + " " + strings.Join(q, " ")
}
