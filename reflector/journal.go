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

const (
	journalExt = ".jsonl"
	tempMark   = ".tmp-"
)

// entry is one journaled turn.
type entry struct {
	turn     Turn
	attempts int // failed runs that covered this turn
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
		Attempts: e.attempts}
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
	return entry{turn: t, attempts: w.Attempts}, nil
}

// journal is the folder of journal files. Callers serialise the operations
// on one user's file; different users' files are independent.
type journal struct {
	dir      string
	syncFile func(*os.File) error // fsync seams, swapped by tests
	syncDir  func(*os.File) error
}

func newJournal(dir string) *journal {
	return &journal{dir: dir, syncFile: (*os.File).Sync, syncDir: (*os.File).Sync}
}

func (j *journal) path(user string) string { return filepath.Join(j.dir, user+journalExt) }

// fsyncDir makes a creation, rename or removal in the folder durable.
func (j *journal) fsyncDir() error {
	d, err := os.Open(j.dir)
	if err != nil {
		return fmt.Errorf("reflector: open %s for fsync: %w", j.dir, err)
	}
	defer d.Close()
	if err := j.syncDir(d); err != nil {
		return fmt.Errorf("reflector: fsync %s: %w", j.dir, err)
	}
	return nil
}

// append adds e to its user's file and makes it durable. On a failed write
// the file is cut back to its old length, so no torn line stays behind.
func (j *journal) append(e entry) error {
	line, err := encodeLine(e)
	if err != nil {
		return err
	}
	p := j.path(e.turn.User)
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE|os.O_EXCL, 0o600)
	created := err == nil
	if errors.Is(err, fs.ErrExist) {
		f, err = os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	}
	if err != nil {
		return fmt.Errorf("reflector: open journal: %w", err)
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("%s is not a regular file", p)
	}
	if err == nil {
		_, err = f.Write(line)
		if err == nil {
			err = j.syncFile(f)
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
			_ = os.Remove(p) // the new file holds only this line: leave no turn Add did not vouch for
		}
	}
	if err != nil {
		return fmt.Errorf("reflector: journal turn %q of %s: %w", e.turn.TaskID, e.turn.User, err)
	}
	return nil
}

// rewrite replaces user's file by entries, atomically; no entries remove it.
func (j *journal) rewrite(user string, entries []entry) error {
	p := j.path(user)
	if len(entries) == 0 {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("reflector: remove journal: %w", err)
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
	var rnd [8]byte
	_, _ = rand.Read(rnd[:]) // crypto/rand.Read does not fail on supported platforms
	// A leading '.' keeps temp names apart from every journal name.
	tmp := filepath.Join(j.dir, "."+user+journalExt+tempMark+hex.EncodeToString(rnd[:]))
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("reflector: rewrite journal: %w", err)
	}
	_, err = f.Write(buf.Bytes())
	if err == nil {
		err = j.syncFile(f)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, p)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("reflector: rewrite journal of %s: %w", user, err)
	}
	return j.fsyncDir()
}

// replay reads every journal file: the pending turns by user. Leftover temp
// files are removed; unreadable lines are skipped with a warning and their
// file rewritten without them.
func (j *journal) replay(log *slog.Logger) (map[string][]entry, error) {
	des, err := os.ReadDir(j.dir)
	if err != nil {
		return nil, fmt.Errorf("reflector: read journal folder: %w", err)
	}
	out := map[string][]entry{}
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
		entries, err := j.load(user, log)
		if err != nil {
			return nil, err
		}
		if len(entries) > 0 {
			out[user] = entries
		}
	}
	return out, nil
}

// load reads one user's file, cleaning it up when it had bad lines.
func (j *journal) load(user string, log *slog.Logger) ([]entry, error) {
	p := j.path(user)
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("reflector: read journal: %w", err)
	}
	var entries []entry
	dirty := len(data) == 0 || data[len(data)-1] != '\n'
	for i, line := range bytes.Split(data, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		e, err := parseLine(line)
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
	if dirty {
		if err := j.rewrite(user, entries); err != nil {
			return nil, err
		}
	}
	return entries, nil
}
