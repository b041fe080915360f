package intake

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mnemo-agent/mnemo/memory/durable"
)

// ErrDuplicate is Add's answer for a message the journal holds already, or
// answered within DoneTTL: acknowledge it, do not answer it again.
var ErrDuplicate = errors.New("intake: the message was received already")

// ErrClosed is returned after Close.
var ErrClosed = errors.New("intake: the journal is closed")

const (
	ext = ".jsonl"
	// minCompact is the size below which the file is never rewritten
	// while running.
	minCompact = 1 << 20
)

// How long, and how many of, the dedupe keys of answered messages are
// remembered against a redelivery, unless Options say otherwise.
const (
	DedupeMax = 5000          // event keys remembered
	DedupeTTL = 2 * time.Hour // how long an event key is remembered
)

// Options configures a Journal.
type Options struct {
	// Dir is the journal's folder (mnemo serve: <state>/intake), created
	// (0o700) when missing. "" keeps the journal in memory only.
	Dir string
	// Name names the file, Dir/Name.jsonl ("slack", "discord").
	Name string
	// DoneTTL is how long the keys of an answered message are remembered
	// (0 → DedupeTTL); DoneMax bounds how many are (0 → DedupeMax).
	DoneTTL time.Duration
	DoneMax int

	Logger *slog.Logger     // nil → discard
	Now    func() time.Time // nil → time.Now
	// Faults is called before each disk operation on the journal, a
	// rewrite's temp file and the folder; nil in production. Tests inject
	// write, fsync and folder faults.
	Faults durable.Hook
}

// Entry is one message in the journal.
type Entry struct {
	ID   string          // the platform's id of the message: its first dedupe key
	Keys []string        // more dedupe keys (an event id, a client message id)
	User string          // the memory user who wrote it (Forget)
	At   time.Time       // when it was received (Add sets it when zero)
	Data json.RawMessage // what the adapter needs to answer it (JSON)

	// Set in what Pending returns: the reply was decided (Posting) and
	// may be posted in part already.
	Posting bool
	Reply   string
	// Drafts are the platform's ids of the messages a streamed reply
	// showed (Drafted), in order: after a crash they are finished by
	// editing them, not posted again.
	Drafts []string
}

// state is where a pending message is.
type state int

const (
	received state = iota // waiting for its turn
	running               // being answered
	posting               // its reply is being posted
)

// item is a pending message.
type item struct {
	Entry
	seq   uint64
	state state
	added *durable.Batch // the batch of its add record
}

// Journal is an adapter's intake journal. It is safe for concurrent use.
type Journal struct {
	opts Options
	log  *slog.Logger
	now  func() time.Time
	path string       // "" in memory only
	file *durable.Log // the records: group commit, cut-back, rewrites
	// root is the journal's folder, opened: the file is opened through
	// it, so a link there that leads out of it is never written through
	// (nil in memory only).
	root *os.Root

	mu        sync.Mutex
	items     map[string]*item
	keys      map[string]*item // every dedupe key of a pending message
	done      *doneSet
	seq       uint64
	leftover  []Entry // what Open found pending
	closed    bool
	compactAt int64
}

// Open reads the journal (skipping lines that do not parse, such as the
// torn last line of a crash), rewrites it with only what is still pending
// and remembered, and returns it ready for Add. Pending tells what a
// previous run left unanswered.
func Open(o Options) (*Journal, error) {
	if o.DoneTTL <= 0 {
		o.DoneTTL = DedupeTTL
	}
	if o.DoneMax <= 0 {
		o.DoneMax = DedupeMax
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	j := &Journal{opts: o, log: o.Logger, now: o.Now, file: durable.NewLog(nil, "", durable.LogOptions{}),
		items: map[string]*item{}, keys: map[string]*item{}, done: newDoneSet(o.DoneMax, o.DoneTTL)}
	if o.Dir == "" {
		return j, nil
	}
	if o.Name == "" || strings.ContainsAny(o.Name, `/\`) || strings.HasPrefix(o.Name, ".") {
		return nil, fmt.Errorf("intake: journal name %q is not a file name", o.Name)
	}
	j.path = filepath.Join(o.Dir, o.Name+ext)
	if err := os.MkdirAll(o.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("intake: create the journal folder: %w", err)
	}
	j.removeTemps()
	root, err := os.OpenRoot(o.Dir)
	if err != nil {
		return nil, fmt.Errorf("intake: open the journal folder: %w", err)
	}
	dir := durable.RootDir{Root: root}
	data, err := durable.ReadFile(dir, o.Name+ext)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		root.Close()
		return nil, fmt.Errorf("intake: read the journal: %w", err)
	}
	j.root = root
	j.file = durable.NewLog(dir, o.Name+ext, durable.LogOptions{Hook: o.Faults})
	j.load(data)
	j.mu.Lock()
	defer j.mu.Unlock()
	if err := j.compactLocked(); renamed(err) {
		j.log.Warn("intake: cannot fsync the journal folder after a rewrite; retrying before the next write", "file", j.path, "error", err)
	} else if err != nil {
		j.file.Close()
		root.Close()
		return nil, err
	}
	if n := len(j.leftover); n > 0 {
		j.log.Info("intake: messages received before a restart are still to be answered", "file", j.path, "messages", n)
	}
	return j, nil
}

// removeTemps deletes the temp files of rewrites a crash interrupted
// (durable's, and ".<name>.jsonl.tmp-*" of older mnemos).
func (j *Journal) removeTemps() {
	des, _ := os.ReadDir(j.opts.Dir) // unreadable: the read below says why
	for _, de := range des {
		if n := de.Name(); strings.HasPrefix(n, "."+j.opts.Name+ext+".") &&
			(durable.IsTemp(n) || strings.HasPrefix(n, "."+j.opts.Name+ext+".tmp-")) {
			_ = os.Remove(filepath.Join(j.opts.Dir, de.Name()))
		}
	}
}

// load applies the records of data in order.
func (j *Journal) load(data []byte) {
	durable.Scan(data, func(line []byte) error {
		r, err := parseRecord(line)
		if err == nil {
			j.apply(r)
		}
		return err
	}, func(n int, torn bool, err error) {
		if torn {
			j.log.Warn("intake: dropping the torn last line of the journal (a crash while it was written; that message was not acknowledged)",
				"file", j.path, "line", n)
		} else {
			j.log.Warn("intake: skipping an unreadable journal line", "file", j.path, "line", n, "error", err)
		}
	})
	for _, it := range j.sorted() {
		j.leftover = append(j.leftover, it.copyEntry())
	}
}

// apply replays one record.
func (j *Journal) apply(r record) {
	switch r.Op {
	case opAdd:
		e := Entry{ID: r.ID, Keys: r.Keys, User: r.User, At: r.At, Data: r.Data}
		if j.known(e) {
			return
		}
		j.insert(e)
	case opPost:
		if it := j.items[r.ID]; it != nil {
			it.state, it.Posting, it.Reply = posting, true, r.Text
		}
	case opDraft:
		if it := j.items[r.ID]; it != nil {
			it.Drafts = r.Msgs
		}
	case opDone:
		if it := j.items[r.ID]; it != nil {
			j.remove(it)
		}
		j.done.add(r.At, append([]string{r.ID}, r.Keys...)...)
	}
}

// known: a key of e is pending or remembered as answered.
func (j *Journal) known(e Entry) bool {
	if j.keys[e.ID] != nil {
		return true
	}
	for _, k := range e.Keys {
		if j.keys[k] != nil {
			return true
		}
	}
	return j.done.has(j.now(), append([]string{e.ID}, e.Keys...)...)
}

// pendingWith is the pending message that has a key of e, or nil.
func (j *Journal) pendingWith(e Entry) *item {
	if it := j.keys[e.ID]; it != nil {
		return it
	}
	for _, k := range e.Keys {
		if it := j.keys[k]; it != nil {
			return it
		}
	}
	return nil
}

func (j *Journal) insert(e Entry) *item {
	j.seq++
	it := &item{Entry: e, seq: j.seq}
	j.items[e.ID] = it
	j.keys[e.ID] = it
	for _, k := range e.Keys {
		if k != "" {
			j.keys[k] = it
		}
	}
	return it
}

func (j *Journal) remove(it *item) {
	delete(j.items, it.ID)
	for _, k := range append([]string{it.ID}, it.Keys...) {
		if j.keys[k] == it {
			delete(j.keys, k)
		}
	}
}

// sorted is the pending messages in the order they came.
func (j *Journal) sorted() []*item {
	out := make([]*item, 0, len(j.items))
	for _, it := range j.items {
		out = append(out, it)
	}
	slices.SortFunc(out, func(a, b *item) int { return cmp.Compare(a.seq, b.seq) })
	return out
}

func (it *item) copyEntry() Entry {
	e := it.Entry
	e.Keys = slices.Clone(e.Keys)
	e.Data = slices.Clone(e.Data)
	e.Drafts = slices.Clone(e.Drafts)
	return e
}

// Pending is what a previous run left unanswered, in the order it came:
// answer each (or, when Posting, post what is missing of Reply).
func (j *Journal) Pending() []Entry {
	j.mu.Lock()
	defer j.mu.Unlock()
	out := make([]Entry, len(j.leftover))
	for i, e := range j.leftover {
		out[i] = e
		out[i].Keys = slices.Clone(e.Keys)
		out[i].Data = slices.Clone(e.Data)
		out[i].Drafts = slices.Clone(e.Drafts)
	}
	return out
}

// Add journals messages and returns, for each, nil once it is durable (a
// new message: acknowledge it, then answer it), ErrDuplicate (the journal
// has it or answered it: acknowledge it, do not answer it), or why it
// could not be written (do not acknowledge it). All of them share one
// write and one fsync, and with concurrent callers' records too.
func (j *Journal) Add(entries ...Entry) []error {
	errs := make([]error, len(entries))
	var mine []*item // written by this call
	var mineAt []int // their places in entries
	dups := map[int]*item{}
	var b *durable.Batch
	j.mu.Lock()
	now := j.now()
	for i, e := range entries {
		switch {
		case j.closed:
			errs[i] = ErrClosed
		case e.ID == "" || len(e.Keys) > maxKeys || !json.Valid(e.Data):
			errs[i] = fmt.Errorf("intake: message %q: no id, more than %d keys, or data that is not JSON", e.ID, maxKeys)
		case j.pendingWith(e) != nil:
			dups[i] = j.pendingWith(e)
		case j.done.has(now, append([]string{e.ID}, e.Keys...)...):
			errs[i] = ErrDuplicate
		default:
			if e.At.IsZero() {
				e.At = now
			}
			e.Keys = slices.Clone(e.Keys)
			e.Data = slices.Clone(e.Data)
			e.Posting, e.Reply = false, ""
			it := j.insert(e)
			b = j.appendLocked(record{Op: opAdd, ID: e.ID, Keys: e.Keys, User: e.User, At: e.At, Data: e.Data})
			it.added = b
			mine = append(mine, it)
			mineAt = append(mineAt, i)
		}
	}
	j.mu.Unlock()
	var err error
	if b != nil {
		err = j.commit(b)
	}
	if err != nil {
		j.mu.Lock()
		for _, it := range mine {
			if j.items[it.ID] == it {
				j.remove(it) // never acknowledged: a redelivery is new
			}
		}
		j.mu.Unlock()
	}
	for _, i := range mineAt {
		errs[i] = err
	}
	for i, it := range dups {
		errs[i] = ErrDuplicate
		if it.added != nil { // not replayed from the file: wait for its write
			if err := it.added.Wait(); err != nil {
				errs[i] = j.failed(err)
			}
		}
	}
	return errs
}

// Start says that the message is about to be answered; false means do not
// answer it (it was forgotten, or answered already). A message the journal
// does not hold (its add failed) may be answered.
func (j *Journal) Start(id string) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	if it := j.items[id]; it != nil {
		if it.state == received {
			it.state = running
		}
		return true
	}
	return !j.done.has(j.now(), id)
}

// Posting journals the reply to a message before its first part is
// posted, so that after a crash only the missing parts are posted. A
// message the journal does not hold is not recorded (nil). An error is
// logged by the journal; the caller may post anyway.
func (j *Journal) Posting(id, reply string) error {
	return j.update(id, func(it *item) *durable.Batch {
		it.state, it.Posting, it.Reply = posting, true, reply
		return j.appendLocked(record{Op: opPost, ID: id, Text: reply})
	})
}

// Drafted journals the platform's ids of the messages a streamed reply to
// message id shows so far (all of them, in order; at most 16), so that
// after a crash the reply is finished in them rather than posted again.
// A message the journal does not hold is not recorded (nil).
func (j *Journal) Drafted(id string, msgs []string) error {
	if len(msgs) > maxDrafts {
		return fmt.Errorf("intake: %d draft messages (at most %d)", len(msgs), maxDrafts)
	}
	msgs = slices.Clone(msgs)
	return j.update(id, func(it *item) *durable.Batch {
		it.Drafts = msgs
		return j.appendLocked(record{Op: opDraft, ID: id, Msgs: msgs})
	})
}

// Done takes a message out of the journal: its reply was posted (or could
// not be, for good). Its keys stay known for DoneTTL.
func (j *Journal) Done(id string) error { return j.update(id, j.doneLocked) }

// update records what change (called with j.mu held) does to message id,
// and commits it. A message the journal does not hold is not recorded
// (nil); a closed journal records nothing (ErrClosed).
func (j *Journal) update(id string, change func(*item) *durable.Batch) error {
	j.mu.Lock()
	if j.closed {
		j.mu.Unlock()
		return ErrClosed
	}
	it := j.items[id]
	if it == nil {
		j.mu.Unlock()
		return nil
	}
	b := change(it)
	j.mu.Unlock()
	return j.commit(b)
}

func (j *Journal) doneLocked(it *item) *durable.Batch {
	j.remove(it)
	now := j.now()
	j.done.add(now, append([]string{it.ID}, it.Keys...)...)
	return j.appendLocked(record{Op: opDone, ID: it.ID, Keys: it.Keys, At: now})
}

// Forget drops the messages of user that are waiting for their turn (not
// those being answered or posted) and returns how many it dropped: they
// will not be answered, now or after a restart. A redelivery of one is
// not answered either. The file is then rewritten without them (a purge),
// so no byte of what they said stays in it.
func (j *Journal) Forget(user string) int {
	j.mu.Lock()
	if j.closed {
		j.mu.Unlock()
		return 0
	}
	var b *durable.Batch
	n := 0
	for _, it := range j.sorted() {
		if it.User != user || it.state != received || (it.added != nil && !it.added.Durable()) {
			continue
		}
		b = j.doneLocked(it)
		n++
	}
	if n > 0 {
		j.compactAt = 0 // the write of b rewrites the file: the forgotten messages' text goes with it
	}
	j.mu.Unlock()
	if b != nil {
		if j.commit(b) == nil { // a failure is logged; in memory they are gone
			j.purge()
		}
	}
	if n > 0 {
		j.log.Info(j.opts.Name+": queued messages dropped: their user's memory is forgotten", "memory_user", user, "messages", n)
	}
	return n
}

// Len is the number of messages in the journal.
func (j *Journal) Len() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return len(j.items)
}

// Path is the journal's file ("" in memory only).
func (j *Journal) Path() string { return j.path }

// Close waits for the write in progress and closes the file. What is
// pending stays in it for the next Open. It may be called more than once.
func (j *Journal) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.closed = true
	err := j.file.Close()
	if j.root != nil {
		j.root.Close()
	}
	if err != nil {
		return fmt.Errorf("intake: %w", err)
	}
	return nil
}
