package reflector

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mnemo-agent/mnemo/agent"
)

// The journal keeps the turns that have not been reflected yet, one file per
// user, StateDir/reflector/<user>.jsonl, one JSON object per line:
//
//	{"taskId":"t1","user":"alice","platform":"slack","speaker":"Alice",
//	 "userText":"I'm Ada","replyText":"Hi Ada","time":"2026-03-05T14:02:00Z",
//	 "context":[{"author":"bob","text":"..."}],"attempts":1}
//
// A turn is appended (and fsynced, with the folder fsynced when the file is
// new) before Add returns. After a run the file is replaced atomically (temp
// file, fsync, rename, folder fsync) by the turns that are still pending,
// or removed when none are. "attempts" counts the failed runs that covered
// the turn, so the retry limit holds across restarts. A line that does not
// parse (a crash in the middle of an append) is skipped with a warning and
// the file rewritten clean at Open, so later appends never extend it.
//
// Lines with a "kind" record the run in progress (see record), so that a
// run cut short by a crash, a shutdown or a failure is resumed rather than
// redone: its model replies are replayed and each change it made is made
// at most once.

const (
	journalExt = ".jsonl"
	tempMark   = ".tmp-"
)

// entry is one journaled turn.
type entry struct {
	turn     Turn
	attempts int  // failed runs that covered this turn
	cut      bool // its texts were cut to fit the model's context
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
	Attempts     int           `json:"attempts,omitempty"`
	Cut          bool          `json:"cut,omitempty"`
}

// validUser checks a memory user name before it becomes a file name: 1–64
// ASCII letters, digits, '.', '_' or '-', not starting with '.'.
func validUser(name string) error {
	if err := agent.ValidateUser(name); err != nil {
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
		Attempts: e.attempts, Cut: e.cut}
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
	if w.Attempts < 0 {
		return entry{}, fmt.Errorf("negative attempts %d", w.Attempts)
	}
	t := Turn{TaskID: w.TaskID, User: w.User, Conversation: w.Conversation, Platform: w.Platform,
		Speaker: w.Speaker, UserText: w.UserText, ReplyText: w.ReplyText, Time: w.Time, Failed: w.Failed}
	for _, c := range w.Context {
		t.Context = append(t.Context, ContextMessage(c))
	}
	return entry{turn: t, attempts: w.Attempts, cut: w.Cut}, nil
}

// journal is the folder of journal files. Callers serialise the operations
// on one user's file; different users' files are independent.
type journal struct {
	dir   string
	fault faultHook
}

func newJournal(dir string, fault faultHook) *journal {
	return &journal{dir: dir, fault: fault}
}

// Disk operations as Config.Faults names them (the memory store uses the
// same names, so one hook serves both).
const (
	opCreate   = "create"
	opWrite    = "write"
	opFsync    = "fsync"
	opRename   = "rename"
	opFsyncDir = "fsyncdir"
	opRemove   = "remove"
)

// faultHook is Config.Faults; a nil hook injects nothing.
type faultHook func(op, name string) error

func (f faultHook) at(op, name string) error {
	if f == nil {
		return nil
	}
	return f(op, name)
}

func (j *journal) path(user string) string { return filepath.Join(j.dir, user+journalExt) }

// fsyncDir makes a creation, rename or removal in the folder durable.
func (j *journal) fsyncDir() error { return fsyncFolder(j.dir, j.fault) }

func fsyncFolder(dir string, fault faultHook) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("reflector: open %s for fsync: %w", dir, err)
	}
	defer d.Close()
	if err = fault.at(opFsyncDir, dir); err == nil {
		err = d.Sync()
	}
	if err != nil {
		return fmt.Errorf("reflector: fsync %s: %w", dir, err)
	}
	return nil
}

// append adds e to its user's file and makes it durable.
func (j *journal) append(e entry) error {
	line, err := encodeLine(e)
	if err != nil {
		return err
	}
	if err := j.appendLine(e.turn.User, line); err != nil {
		return fmt.Errorf("reflector: journal turn %q of %s: %w", e.turn.TaskID, e.turn.User, err)
	}
	return nil
}

// appendRecord adds one line about user's run and makes it durable.
func (j *journal) appendRecord(user string, rec record) error {
	line, err := json.Marshal(rec)
	if err == nil {
		err = j.appendLine(user, append(line, '\n'))
	}
	if err != nil {
		return fmt.Errorf("reflector: journal the %s of run %s of %s: %w", rec.Kind, rec.Run, user, err)
	}
	return nil
}

// appendLine adds one line to user's file and fsyncs it. On a failed write
// the file is cut back to its old length, so no torn line stays behind;
// disk failures are wrapped with agent.ErrStorage.
func (j *journal) appendLine(user string, line []byte) error {
	p := j.path(user)
	var f *os.File
	err := j.fault.at(opCreate, p)
	if err == nil {
		f, err = os.OpenFile(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE|os.O_EXCL, 0o600)
	}
	created := err == nil
	if errors.Is(err, fs.ErrExist) {
		f, err = os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	}
	if err != nil {
		return fmt.Errorf("%w: open journal: %w", agent.ErrStorage, err)
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("%s is not a regular file", p)
	}
	if err == nil {
		if err = j.fault.at(opWrite, p); err == nil {
			_, err = f.Write(line)
		}
		if err == nil {
			if err = j.fault.at(opFsync, p); err == nil {
				err = f.Sync()
			}
		}
		if err != nil {
			_ = f.Truncate(fi.Size())
		}
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && created {
		if err = j.fsyncDir(); err != nil {
			_ = os.Remove(p) // the new file holds only this line: leave nothing Add did not vouch for
		}
	}
	if err != nil {
		return fmt.Errorf("%w: %w", agent.ErrStorage, err)
	}
	return nil
}

// rewrite replaces user's file by entries and the records of run (nil: no
// run open), atomically; nothing left removes it.
func (j *journal) rewrite(user string, entries []entry, run *runLog) error {
	p := j.path(user)
	if len(entries) == 0 {
		err := j.fault.at(opRemove, p)
		if err == nil {
			err = os.Remove(p)
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("reflector: remove journal: %w: %w", agent.ErrStorage, err)
		}
		return j.fsyncDir()
	}
	var buf bytes.Buffer
	for _, e := range entries {
		line, err := encodeLine(e)
		if err != nil {
			return err
		}
		buf.Write(line)
	}
	for _, rec := range run.records() {
		line, _ := json.Marshal(rec) // strings, ints and a decoded message: cannot fail
		buf.Write(append(line, '\n'))
	}
	if err := j.install(p, buf.Bytes()); err != nil {
		return fmt.Errorf("reflector: rewrite journal of %s: %w", user, err)
	}
	return nil
}

// install puts data at name atomically: a temp file beside it (its name
// starts with '.', apart from every journal name), fsynced, renamed over
// name, and the folder fsynced. A failure before the rename leaves name
// as it was; disk failures are wrapped with agent.ErrStorage.
func (j *journal) install(name string, data []byte) error {
	var rnd [8]byte
	_, _ = rand.Read(rnd[:]) // crypto/rand.Read does not fail on supported platforms
	tmp := filepath.Join(filepath.Dir(name), "."+filepath.Base(name)+tempMark+hex.EncodeToString(rnd[:]))
	err := j.writeFile(tmp, data)
	if err == nil {
		if err = j.fault.at(opRename, name); err == nil {
			err = os.Rename(tmp, name)
		}
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("%w: %w", agent.ErrStorage, err)
	}
	return fsyncFolder(filepath.Dir(name), j.fault)
}

// writeFile creates name (O_EXCL) with data, fsynced.
func (j *journal) writeFile(name string, data []byte) error {
	var f *os.File
	err := j.fault.at(opCreate, name)
	if err == nil {
		f, err = os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	}
	if err != nil {
		return err
	}
	if err = j.fault.at(opWrite, name); err == nil {
		_, err = f.Write(data)
	}
	if err == nil {
		if err = j.fault.at(opFsync, name); err == nil {
			err = f.Sync()
		}
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// replay reads every journal file: the pending turns by user. Leftover temp
// files are removed; unreadable lines are skipped with a warning and their
// file rewritten without them.
func (j *journal) replay(log *slog.Logger) (map[string]pending, error) {
	des, err := os.ReadDir(j.dir)
	if err != nil {
		return nil, fmt.Errorf("reflector: read journal folder: %w", err)
	}
	out := map[string]pending{}
	for _, de := range des {
		name := de.Name()
		if strings.HasPrefix(name, ".") && strings.Contains(name, journalExt+tempMark) {
			_ = os.Remove(filepath.Join(j.dir, name)) // a rewrite that crashed before its rename
			continue
		}
		user, ok := strings.CutSuffix(name, journalExt)
		if !ok {
			continue
		}
		if err := validUser(user); err != nil || !de.Type().IsRegular() {
			log.Warn("reflector: ignoring a stray file in the journal folder", "file", filepath.Join(j.dir, name))
			continue
		}
		entries, run, err := j.load(user, log)
		if err != nil {
			return nil, err
		}
		if len(entries) > 0 {
			out[user] = pending{entries: entries, run: run}
		}
	}
	return out, nil
}

// pending is what a user's journal holds: the turns, and the run that
// was in progress over the first of them, if any.
type pending struct {
	entries []entry
	run     *runLog
}

// load reads one user's file, cleaning it up when it had bad lines.
func (j *journal) load(user string, log *slog.Logger) ([]entry, *runLog, error) {
	p := j.path(user)
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, nil, fmt.Errorf("reflector: read journal: %w", err)
	}
	var entries []entry
	var recs []record
	dirty := len(data) == 0 || data[len(data)-1] != '\n'
	for i, line := range bytes.Split(data, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var probe struct {
			Kind string `json:"kind"`
		}
		err := json.Unmarshal(line, &probe)
		if err == nil && probe.Kind == "failed" {
			continue // a failed file moved back by an admin: its note on why
		}
		if err == nil && probe.Kind != "" {
			var rec record
			if rec, err = parseRecord(line); err == nil {
				recs = append(recs, rec)
				continue
			}
		}
		var e entry
		if err == nil {
			e, err = parseLine(line)
		}
		if err == nil && e.turn.User != user {
			err = fmt.Errorf("the turn belongs to %q", e.turn.User)
		}
		if err != nil {
			dirty = true
			log.Warn("reflector: skipping an unreadable journal line (a crash while it was written?)",
				"file", p, "line", i+1, "err", err)
			continue
		}
		entries = append(entries, e)
	}
	run, problem := assembleRun(recs, len(entries))
	if problem != "" {
		dirty = true
		log.Warn("reflector: "+problem+"; the turns are reflected afresh", "file", p)
	}
	if dirty {
		if err := j.rewrite(user, entries, run); err != nil {
			return nil, nil, err
		}
	}
	return entries, run, nil
}
