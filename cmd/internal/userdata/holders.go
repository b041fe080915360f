package userdata

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/agent"
	"github.com/mnemo-agent/mnemo/memory"
	"github.com/mnemo-agent/mnemo/memory/durable"
	memhistory "github.com/mnemo-agent/mnemo/memory/history"
	"github.com/mnemo-agent/mnemo/reflector"
)

// Holder is one place that keeps state about an owner (a person or a
// channel). Forget deletes what it keeps of r.Owner (for r.Path only,
// when it keeps state per memory file) and says what it dropped; a holder
// that keeps nothing of that kind of owner returns the zero Dropped.
type Holder interface {
	// Name says what the holder keeps, in a few words ("reflection journal").
	Name() string
	Forget(ctx context.Context, r Request) (Dropped, error)
}

// Request is one forget: all of Owner's data, or with Path one memory
// file (facts/<name>.md, episodes/YYYY-MM.md) and what is kept of it.
type Request struct {
	Owner, Path string
	// KeepHistory leaves the earlier versions of the files.
	KeepHistory bool
}

// all reports whether r forgets everything of a person.
func (r Request) all() bool { return r.Path == "" && !mnemo.IsChannel(r.Owner) }

// Dropped is what one holder dropped that the person should hear of
// besides the files: N items, "2 turns waiting to be reflected".
type Dropped struct {
	N int
	// Noun and Rest name the items: "turn", " waiting to be reflected".
	Noun, Rest string
	// Verb says what was done to them; "" is "dropped".
	Verb string
}

// wrap names the items a holder could not drop.
func (d Dropped) wrap(owner string, err error) error {
	return fmt.Errorf("forget %s: could not drop the %ss%s: %w", owner, d.Noun, d.Rest, err)
}

// Wiring is what the process runs, from which Holders finds each
// holder's data. A nil live part means no process keeps it live (offline):
// its holder reads the files instead.
type Wiring struct {
	StateDir string
	Store    *memory.Store        // the memory files (and their index cache)
	History  *memhistory.Store    // the files' earlier versions; nil: not opened (offline, --keep-history)
	Reflect  *reflector.Reflector // nil: the journal's files
	Agent    *agent.Agent         // nil: no short-term history is kept
	// Journals are the chat platforms' intake journals, as the platforms
	// registered them, in their order.
	Journals []Journal
}

// Journal is a chat platform's intake journal in <state>/intake: the
// messages it took and has not answered yet.
type Journal struct {
	Platform string
	// Live is the running adapter's Forget(user): it drops the user's
	// messages from its queue and journal. nil: the platform does not run.
	Live func(user string) int
	// File drops user's messages from the journal's file in dir while the
	// platform does not run; nil: the platform keeps no file.
	File func(dir, user string) (int, error)
}

// Holders is the registry: every place that keeps a person's or a
// channel's data, in the order a forget runs them (the pending work first,
// so that none of it writes back what the files' deletion removes). It is
// the one list, for the running and the offline case.
func Holders(w Wiring) []Holder {
	var hs []Holder
	intake := filepath.Join(w.StateDir, "intake")
	for _, j := range w.Journals {
		q := &queue{platform: j.Platform, live: j.Live}
		if q.live == nil && j.File != nil {
			file := j.File
			q.file = func(user string) (int, error) { return file(intake, user) }
		}
		if q.live != nil || q.file != nil {
			hs = append(hs, q)
		}
	}
	return append(hs,
		&reflectionJournal{refl: w.Reflect, stateDir: w.StateDir},
		&shortTermHistory{agent: w.Agent},
		&givenUp{stateDir: w.StateDir},
		&memoryFiles{store: w.Store},
		&rollups{store: w.Store, hist: w.History, stateDir: w.StateDir},
		&searchIndex{store: w.Store},
		&indexCache{dir: filepath.Join(w.StateDir, "index")},
		&fileHistory{hist: w.History},
		&chatHistory{stateDir: w.StateDir},
	)
}

// queue is a platform's messages accepted and not answered yet (its
// intake journal): a person's are dropped before they become turns.
type queue struct {
	platform string
	live     func(user string) int          // the running adapter's
	file     func(user string) (int, error) // the journal's file, offline
}

func (q *queue) Name() string { return "intake journal (" + q.platform + ")" }

func (q *queue) Forget(_ context.Context, r Request) (Dropped, error) {
	d := Dropped{Noun: "message", Rest: " queued for an answer on " + q.platform}
	if mnemo.IsChannel(r.Owner) {
		return Dropped{}, nil // a channel's messages are their speakers'
	}
	if q.live != nil {
		d.N = q.live(r.Owner)
		return d, nil
	}
	n, err := q.file(r.Owner)
	d.N = n
	if err != nil {
		return d, d.wrap(r.Owner, err)
	}
	return d, nil
}

// reflectionJournal is the turns waiting to be reflected: a person's are
// dropped; a channel is detached from the turns said in it, so that they
// are not reflected back into its forgotten memory (the turns stay their
// speakers'). A person's one file forgotten leaves their turns, marked so
// that their reflection does not write that file again (a tombstone).
type reflectionJournal struct {
	refl     *reflector.Reflector
	stateDir string
}

func (j *reflectionJournal) Name() string { return "reflection journal" }

func (j *reflectionJournal) Forget(ctx context.Context, r Request) (Dropped, error) {
	d := Dropped{Noun: "turn", Rest: " waiting to be reflected"}
	channel := mnemo.IsChannel(r.Owner)
	if channel {
		d.Verb = "detached the channel from"
	}
	var err error
	switch {
	case !channel && r.Path != "":
		d = Dropped{} // the turns stay; nothing to report
		if j.refl != nil {
			_, err = j.refl.ForgetFile(ctx, r.Owner, r.Path)
		} else {
			_, err = reflector.ForgetFileJournaled(j.stateDir, r.Owner, r.Path)
		}
		if err != nil {
			return d, fmt.Errorf("forget %s: could not keep %s out of the turns waiting to be reflected: %w", r.Owner, r.Path, err)
		}
		return d, nil
	case channel && j.refl != nil:
		d.N, err = j.refl.ForgetChannel(ctx, r.Owner)
	case channel:
		d.N, err = reflector.ForgetChannelJournaled(j.stateDir, r.Owner)
	case j.refl != nil:
		d.N, err = j.refl.Forget(ctx, r.Owner)
	default:
		d.N, err = reflector.ForgetJournaled(j.stateDir, r.Owner)
	}
	if err != nil {
		return d, d.wrap(r.Owner, err)
	}
	return d, nil
}

// shortTermHistory is the Thinker's recent turns, which it would go on
// quoting: kept in a running process only.
type shortTermHistory struct{ agent *agent.Agent }

func (h *shortTermHistory) Name() string { return "short-term history" }

func (h *shortTermHistory) Forget(_ context.Context, r Request) (Dropped, error) {
	d := Dropped{Noun: "turn", Rest: " of short-term history"}
	if h.agent != nil && r.all() { // one file forgotten: the conversation goes on
		d.N = h.agent.ForgetUser(r.Owner)
	}
	return d, nil
}

// givenUp is the reflections the reflector gave up on: their turns, kept
// for an admin in <state>/reflector/failed (mnemo memory check lists them).
type givenUp struct{ stateDir string }

func (g *givenUp) Name() string { return "reflections given up on" }

func (g *givenUp) Forget(_ context.Context, r Request) (Dropped, error) {
	d := Dropped{Noun: "reflection", Rest: " given up on"}
	if mnemo.IsChannel(r.Owner) {
		return Dropped{}, nil // their turns are their speakers'
	}
	failed, err := reflector.FailedTurns(g.stateDir)
	if err != nil {
		return d, d.wrap(r.Owner, err)
	}
	for _, f := range failed {
		if f.User != r.Owner {
			continue
		}
		if err := os.Remove(f.Path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return d, d.wrap(r.Owner, err)
		}
		d.N++
	}
	return d, nil
}

// memoryFiles is the owner's memory folder. A missing file or folder is an
// error wrapping memory.ErrNotFound, which Service.Forget returns after
// the other holders ran.
type memoryFiles struct{ store *memory.Store }

func (m *memoryFiles) Name() string { return "memory files" }

func (m *memoryFiles) Forget(_ context.Context, r Request) (Dropped, error) {
	u, err := m.store.User(r.Owner)
	if err != nil {
		return Dropped{}, err
	}
	if r.Path == "" {
		return Dropped{}, u.RemoveAll()
	}
	return Dropped{}, u.Remove(r.Path)
}

// searchIndex is the store's search index of the owner's entries
// (memory_search), kept in process memory: the files' removal empties it
// too, and this empties it even where that removal failed.
type searchIndex struct{ store *memory.Store }

func (s *searchIndex) Name() string { return "memory search index" }

func (s *searchIndex) Forget(_ context.Context, r Request) (Dropped, error) {
	return Dropped{}, s.store.ForgetSearch(r.Owner, r.Path)
}

// indexCache is the memory index kept between runs (it holds the files'
// summaries). The store removes it with the folder; this removes one a
// folder no longer has.
type indexCache struct{ dir string }

func (c *indexCache) Name() string { return "memory index cache" }

func (c *indexCache) Forget(_ context.Context, r Request) (Dropped, error) {
	if r.Path != "" {
		return Dropped{}, nil // the store keeps it in step with the file's removal
	}
	name := filepath.Join(c.dir, r.Owner+".idx")
	if err := removeWithTemps(name); err != nil {
		return Dropped{}, fmt.Errorf("the memory is deleted, but not its index cache %s (%w); delete it by hand", name, err)
	}
	return Dropped{}, nil
}

// fileHistory is the earlier versions of the memory files
// (`mnemo memory history`), unless the forget keeps them.
type fileHistory struct{ hist *memhistory.Store }

func (h *fileHistory) Name() string { return "memory file history" }

func (h *fileHistory) Forget(_ context.Context, r Request) (Dropped, error) {
	if r.KeepHistory || h.hist == nil {
		return Dropped{}, nil
	}
	var err error
	if r.Path == "" {
		err = h.hist.RemoveUser(r.Owner)
	} else {
		err = h.hist.Remove(r.Owner, r.Path)
	}
	if err != nil {
		return Dropped{}, fmt.Errorf("the memory is deleted, but not its history (%w); delete %s by hand", err, filepath.Join(h.hist.Dir(), r.Owner))
	}
	return Dropped{}, nil
}

// chatHistory is what a person typed at the terminal chat (its line
// history, for the up arrow), deleted with all of their memory.
type chatHistory struct{ stateDir string }

func (c *chatHistory) Name() string { return "terminal chat history" }

func (c *chatHistory) Forget(_ context.Context, r Request) (Dropped, error) {
	if !r.all() {
		return Dropped{}, nil
	}
	name := ChatHistoryFile(c.stateDir, r.Owner)
	if err := removeWithTemps(name); err != nil {
		return Dropped{}, fmt.Errorf("the memory is deleted, but not the chat history %s (%w); delete it by hand", name, err)
	}
	return Dropped{}, nil
}

// removeWithTemps removes the file name and the temp copies a crash left
// of it (they hold what was being written); a missing one is no error.
func removeWithTemps(name string) error {
	for _, f := range append(durable.Temps(name), name) {
		if err := os.Remove(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// ChatHistoryFile is the file of what user typed in interactive terminal
// chats, in the state folder.
func ChatHistoryFile(stateDir, user string) string {
	return filepath.Join(stateDir, "chat", user+".history")
}

// Report is what a forget dropped besides the files, in holder order.
type Report []Dropped

// String is "dropped 2 turns waiting to be reflected, 1 turn of
// short-term history": the kinds with something dropped (each verb said
// once), or "" when none had.
func (rep Report) String() string {
	var b strings.Builder
	last := ""
	for _, d := range rep {
		if d.N == 0 {
			continue
		}
		verb := cmp.Or(d.Verb, "dropped")
		switch {
		case b.Len() == 0:
			b.WriteString(verb + " ")
		case verb != last:
			b.WriteString("; " + verb + " ")
		default:
			b.WriteString(", ")
		}
		last = verb
		fmt.Fprintf(&b, "%d %s%s%s", d.N, d.Noun, plural(d.N), d.Rest)
	}
	return b.String()
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
