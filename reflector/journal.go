package reflector

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/agent/clock"
	"github.com/mnemo-agent/mnemo/memory/durable"
)

// The journal keeps the turns that have not been reflected yet, one file per
// user, StateDir/reflector/<user>.jsonl, one JSON object per line:
//
//	{"taskId":"t1","user":"alice","platform":"slack","speaker":"Alice",
//	 "userText":"I'm Ada","replyText":"Hi Ada","time":"2026-03-05T14:02:00Z",
//	 "context":[{"author":"bob","text":"..."}],"attempts":1}
//
// Each user's file is a durable.Log, open for appending while a turn
// written to it waits for its fsync or a run writes its records, and
// closed once it is durable (see jfile, userState.settle): people waiting
// for their idle timer hold no descriptor. A turn is written to it before Add returns — so a
// crash of the process loses nothing — but fsynced off the reply path: a
// flusher woken by the append waits Config.SyncWindow on the clock and
// makes every file written meanwhile durable with one fsync each (group
// commit), so only a crash of the machine within that window can lose the
// turns handed off in it. Close fsyncs what is left before it returns.
//
// Lines with a "kind" record the run in progress (see record), so that a
// run cut short by a crash, a shutdown or a failure is resumed rather than
// redone: its model replies are replayed and each change it made is made
// at most once. Those lines are fsynced before Add's caller or the run
// moves on, since each vouches for something about to happen. A run that
// succeeds appends a "reflected" line (its turns and records are done); the
// file is removed once nothing is pending, and compacted (rewritten
// atomically with only what is pending) once what is done passes
// compactBytes. "attempts" counts the failed runs that covered the turn, so
// the retry limit holds across restarts; a failed run rewrites the file. A
// line that does not parse (a crash in the middle of an append) is skipped
// with a warning and the file rewritten clean at Open, so later appends
// never extend it.

const (
	journalExt = ".jsonl"
)

// entry is one journaled turn.
type entry struct {
	turn     Turn
	attempts int  // failed runs that covered this turn
	cut      bool // its texts were cut to fit the model's context
	// forgotten are memory files forgotten after the turn was said (see
	// ForgetFile): its reflection may not write them again.
	forgotten []string
}

type wireContext struct {
	Author      string `json:"author,omitempty"`
	Text        string `json:"text"`
	FromSpeaker bool   `json:"fromSpeaker,omitempty"`
}

type wireTurn struct {
	TaskID       string        `json:"taskId,omitempty"`
	User         string        `json:"user"`
	Conversation string        `json:"conversation,omitempty"`
	Platform     string        `json:"platform,omitempty"`
	Speaker      string        `json:"speaker,omitempty"`
	UserText     string        `json:"userText"`
	ReplyText    string        `json:"replyText,omitempty"`
	Time         time.Time     `json:"time"`
	Context      []wireContext `json:"context,omitempty"`
	Failed       bool          `json:"failed,omitempty"`
	Channel      bool          `json:"channel,omitempty"`    // said in a channel: reflected shared
	ChannelKey   string        `json:"channelKey,omitempty"` // that channel's memory
	Place        string        `json:"place,omitempty"`      // mnemo.Origin
	Link         string        `json:"link,omitempty"`
	Attempts     int           `json:"attempts,omitempty"`
	Cut          bool          `json:"cut,omitempty"`
	Forgotten    []string      `json:"forgotten,omitempty"` // files forgotten since: not written from this turn
	Explicit     bool          `json:"explicit,omitempty"`  // "Remember this": mnemo.Turn.Explicit
}

// validUser checks a memory user name before it becomes a file name: 1–64
// ASCII letters, digits, '.', '_' or '-', not starting with '.'.
func validUser(name string) error {
	if err := mnemo.ValidateUser(name); err != nil {
		return fmt.Errorf("reflector: %w", err)
	}
	return nil
}

// encodeLine renders e as one journal line ending in '\n' (JSON escapes
// every newline inside strings, so the line has no other).
func encodeLine(e entry) ([]byte, error) {
	t := e.turn
	w := wireTurn{TaskID: t.TaskID, User: t.User, Conversation: t.Conversation, Platform: t.Platform,
		Speaker: t.Speaker, UserText: t.UserText, ReplyText: t.ReplyText, Time: t.Time, Failed: t.Failed,
		Channel: t.Channel, ChannelKey: t.ChannelKey, Place: t.Origin.Place, Link: t.Origin.Link, Attempts: e.attempts, Cut: e.cut, Forgotten: e.forgotten,
		Explicit: t.Explicit}
	for _, c := range t.Context {
		w.Context = append(w.Context, wireContext(c))
	}
	b, err := json.Marshal(w)
	if err != nil {
		return nil, fmt.Errorf("reflector: encode turn %q: %w", t.TaskID, err)
	}
	return append(b, '\n'), nil
}

// parseLine decodes one journal line (without its '\n').
func parseLine(line []byte) (entry, error) {
	var w wireTurn
	if err := json.Unmarshal(line, &w); err != nil {
		return entry{}, err
	}
	if err := validUser(w.User); err != nil {
		return entry{}, err
	}
	if w.ChannelKey != "" {
		if err := mnemo.ValidateChannel(w.ChannelKey); err != nil {
			return entry{}, err
		}
	}
	if w.Attempts < 0 {
		return entry{}, fmt.Errorf("negative attempts %d", w.Attempts)
	}
	t := Turn{TaskID: w.TaskID, User: w.User, Conversation: w.Conversation, Platform: w.Platform,
		Speaker: w.Speaker, UserText: w.UserText, ReplyText: w.ReplyText, Time: w.Time, Failed: w.Failed,
		Channel: w.Channel, ChannelKey: w.ChannelKey, Origin: mnemo.Origin{Place: w.Place, Link: w.Link}, Explicit: w.Explicit}
	if t.Explicit && (t.Channel || t.ChannelKey != "") {
		return entry{}, errors.New("an explicit turn (Remember this) said to be a channel's: it is kept in private memory only")
	}
	for _, c := range w.Context {
		t.Context = append(t.Context, ContextMessage(c))
	}
	return entry{turn: t, attempts: w.Attempts, cut: w.Cut, forgotten: w.Forgotten}, nil
}

// compactBytes is how much reflected content (done turns and records) a
// journal file may hold before it is compacted.
const compactBytes = 64 << 10

// DefaultSyncWindow is Config.SyncWindow's default.
const DefaultSyncWindow = 10 * time.Millisecond

// journal is the folder of journal files, each a durable.Log. Callers
// serialise the operations on one user's file (the user's loop); different
// users' files are independent. The flusher fsyncs files concurrently with
// those operations.
type journal struct {
	dir    string
	fs     durable.FS // durable.Dir(dir), or Config.JournalRoot
	fault  durable.Hook
	clock  clock.Clock
	window time.Duration
	log    *slog.Logger
	// onFlushed is told of each user whose file the flusher fsynced, or
	// failed to: the Reflector pokes the user's state, which closes a
	// file now durable or rewrites one whose fsync failed.
	onFlushed func(user string)

	mu    sync.Mutex
	files map[string]*jfile // the users' files
	dirty map[*jfile]bool   // written since their last fsync

	armed  bool             // a window is open: its timer is on its way to the flusher or running
	timers chan clock.Timer // the window's timer, to the flusher (capacity 1); nil: no flusher
	quit   chan struct{}    // closed to stop the flusher
	done   chan struct{}    // closed when the flusher ended
}

// jfile is one user's journal file: appended to (turns without waiting for
// an fsync, run records with one) and rewritten by durable.Log.
type jfile struct {
	user string
	log  *durable.Log

	mu     sync.Mutex
	broken error // an fsync failed: the file must be rewritten whole
}

func (jf *jfile) brokenErr() error {
	jf.mu.Lock()
	defer jf.mu.Unlock()
	return jf.broken
}

func (jf *jfile) setBroken(err error) {
	jf.mu.Lock()
	jf.broken = err
	jf.mu.Unlock()
}

func newJournal(dir string, hook durable.Hook) *journal {
	return &journal{dir: dir, fs: durable.Dir(dir), fault: hook, clock: clock.Real{}, window: DefaultSyncWindow,
		log: slog.New(slog.DiscardHandler), files: map[string]*jfile{}, dirty: map[*jfile]bool{}}
}

func (j *journal) path(user string) string { return filepath.Join(j.dir, user+journalExt) }

// file is user's file, opened by the next append.
func (j *journal) file(user string) *jfile {
	j.mu.Lock()
	defer j.mu.Unlock()
	jf := j.files[user]
	if jf == nil {
		jf = &jfile{user: user, log: durable.NewLog(j.fs, user+journalExt, durable.LogOptions{Hook: j.fault})}
		j.files[user] = jf
	}
	return jf
}

// storage marks a failure of the disk with mnemo.ErrStorage.
func storage(err error) error {
	if durable.IsDisk(err) {
		return fmt.Errorf("%w: %w", mnemo.ErrStorage, err)
	}
	return err
}

// syncFailed: err is an fsync's (of the file or its folder): the kernel
// may have dropped the written pages, so only a rewrite makes the content
// durable again.
func syncFailed(err error) bool {
	var de *durable.Error
	return errors.As(err, &de) && (de.Op == durable.Fsync || de.Op == durable.FsyncDir)
}

// append writes e to its user's file without waiting for it to be
// durable: the flusher fsyncs it within the sync window. A failed write is
// cut back, so no torn line stays behind.
func (j *journal) append(e entry) error {
	line, err := encodeLine(e)
	if err != nil {
		return err
	}
	jf := j.file(e.turn.User)
	if err := jf.log.Write(line); err != nil {
		return fmt.Errorf("reflector: journal turn %q of %s: %w", e.turn.TaskID, e.turn.User, storage(err))
	}
	j.mu.Lock()
	j.dirty[jf] = true
	if j.timers != nil && !j.armed {
		// Armed here, not by the flusher, so the window starts with the
		// first turn it covers.
		j.armed = true
		j.timers <- j.clock.NewTimer(j.window) // capacity 1, and one armed at a time: never blocks
	}
	j.mu.Unlock()
	return nil
}

// appendRecord adds one line about user's run and makes it durable before
// it returns, with the turns written before it (a failure cuts it back, so
// no line the run was not told of stays).
func (j *journal) appendRecord(user string, rec record) error {
	line, _ := json.Marshal(rec) // strings, ints and a decoded message: cannot fail
	jf := j.file(user)
	err := jf.brokenErr()
	if err == nil {
		if err = jf.log.Commit(jf.log.Add(append(line, '\n'))); syncFailed(err) {
			jf.setBroken(fmt.Errorf("%w: fsync journal: %w", mnemo.ErrStorage, err))
		}
		err = storage(err)
	}
	if err != nil {
		return fmt.Errorf("reflector: journal the %s of run %s of %s: %w", rec.Kind, rec.Run, user, err)
	}
	return nil
}

// flush makes what was written to jf durable; a failure marks it broken.
func (j *journal) flush(jf *jfile) error {
	if jf.brokenErr() != nil {
		return nil
	}
	err := jf.log.Sync()
	if err != nil {
		jf.setBroken(fmt.Errorf("%w: fsync journal: %w", mnemo.ErrStorage, err))
	}
	return err
}

// lookup is user's journal file, nil when it has none.
func (j *journal) lookup(user string) *jfile {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.files[user]
}

// sync makes user's file durable now.
func (j *journal) sync(user string) error {
	jf := j.lookup(user)
	if jf == nil {
		return nil
	}
	return j.flush(jf)
}

// broken reports whether user's file failed an fsync and must be
// rewritten.
func (j *journal) broken(user string) bool {
	jf := j.lookup(user)
	return jf != nil && jf.brokenErr() != nil
}

// markBroken records that user's file must be rewritten (a rewrite of it
// failed).
func (j *journal) markBroken(user string, err error) { j.file(user).setBroken(err) }

// size is the number of bytes in user's open file (0: none open).
func (j *journal) size(user string) int64 {
	jf := j.lookup(user)
	if jf == nil {
		return 0
	}
	return jf.log.Size()
}

// maxOpenJournals bounds the journal files left open for the flusher: past
// it a user's file is fsynced and closed by the operation that wrote it.
const maxOpenJournals = 64

// crowded reports whether more than maxOpenJournals files are open.
func (j *journal) crowded() bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return len(j.files) > maxOpenJournals
}

// clean reports whether user's file is open and holds nothing that waits
// for an fsync (nor a failed one): closing it costs no fsync.
func (j *journal) clean(user string) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	jf := j.files[user]
	return jf != nil && !j.dirty[jf] && jf.brokenErr() == nil
}

// release makes user's file durable and closes it: nothing is pending, or
// the user waits for its timer. A file whose fsync failed stays open
// (and marked) for the user's rewrite: the error says why.
func (j *journal) release(user string) error {
	jf := j.lookup(user)
	if jf == nil {
		return nil
	}
	if err := jf.brokenErr(); err != nil {
		return err
	}
	if err := j.flush(jf); err != nil {
		return err
	}
	j.mu.Lock()
	if j.files[user] == jf {
		delete(j.files, user)
	}
	delete(j.dirty, jf) // fsynced above
	j.mu.Unlock()
	_ = jf.log.Close() // written data is durable whatever Close says
	return nil
}

// start runs the flusher: the first append after a flush opens a window
// (a timer of the sync window on the clock); when it ends the flusher
// fsyncs every file written meanwhile (one fsync per file for all the
// turns of the window), then pokes each file's user.
func (j *journal) start(c clock.Clock, window time.Duration, log *slog.Logger, onFlushed func(string)) {
	j.clock, j.window, j.log, j.onFlushed = c, window, log, onFlushed
	j.timers, j.quit, j.done = make(chan clock.Timer, 1), make(chan struct{}), make(chan struct{})
	go j.flusher()
}

func (j *journal) flusher() {
	defer close(j.done)
	for {
		var t clock.Timer
		select {
		case t = <-j.timers:
		case <-j.quit:
			return
		}
		select {
		case <-t.C():
		case <-j.quit:
			t.Stop()
			return
		}
		j.mu.Lock()
		j.armed = false // appends from now on open the next window
		j.mu.Unlock()
		j.flushAll()
	}
}

// flushAll fsyncs every file written since its last fsync and tells
// onFlushed of each: a file that failed is rewritten whole, one now
// durable is closed while its user waits.
func (j *journal) flushAll() {
	j.mu.Lock()
	dirty := make([]*jfile, 0, len(j.dirty))
	for jf := range j.dirty {
		dirty = append(dirty, jf)
	}
	clear(j.dirty)
	j.mu.Unlock()
	for _, jf := range dirty {
		if err := j.flush(jf); err != nil {
			j.log.Error("reflector: could not make the journal durable; it is rewritten whole", "user", jf.user, "err", err)
		}
		if j.onFlushed != nil {
			j.onFlushed(jf.user)
		}
	}
}

// stop ends the flusher (when started), fsyncing what is left when flush
// is set.
func (j *journal) stop(flush bool) {
	if j.quit == nil {
		return
	}
	close(j.quit)
	<-j.done
	j.mu.Lock()
	if len(j.timers) > 0 {
		(<-j.timers).Stop() // a window the flusher did not take
	}
	j.mu.Unlock()
	if flush {
		j.flushAll()
	}
}
