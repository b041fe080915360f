package reflector

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/agent/text"
)

// cutLimit is the bytes each text of a turn keeps when the turn alone does
// not fit the model's context.
const cutLimit = 4000

// splitError asks for a batch too long for the model's context to be
// reflected in smaller parts: the first keep turns first, or (keep 0) the
// one turn cut down.
type splitError struct {
	keep int
}

func (e *splitError) Error() string {
	if e.keep == 0 {
		return "the turn is too long for the model's context: it is cut and reflected again"
	}
	return fmt.Sprintf("the turns are too long for the model's context together: reflecting the first %d first", e.keep)
}

// splitFor is how to make batch fit: halve it, cut its one turn, or nil
// when the turn was cut already (then it fails as any run does).
func splitFor(batch []entry) *splitError {
	switch {
	case len(batch) > 1:
		return &splitError{keep: len(batch) / 2}
	case !batch[0].cut:
		return &splitError{}
	}
	return nil
}

// split reflects a part of the batch now: the first half, or the turn cut
// down (journaled, so a restart does not try the whole turn again).
func (u *userState) split(batch []entry, s *splitError) {
	r := u.r
	if s.keep == 0 {
		batch = []entry{{turn: cutTurn(batch[0].turn), attempts: batch[0].attempts, cut: true, forgotten: batch[0].forgotten}}
		r.log.Warn("reflection: a turn is too long for the model's context; reflecting it cut down", "user", u.name, "task", batch[0].turn.TaskID)
	} else {
		r.log.Warn("reflection: the turns are too long for the model's context together; reflecting them in parts", "user", u.name, "turns", len(batch), "first", s.keep)
	}
	all := append(append([]entry(nil), batch...), u.queued...)
	if s.keep == 0 {
		if err := r.j.rewrite(u.name, all, nil); err != nil {
			r.log.Error("reflection: could not journal the cut turn; the whole turn is tried again at the next start", "user", u.name, "err", err)
		}
	}
	u.queued = all
	u.run = newRunLog(max(s.keep, 1))
	if r.ctx.Err() == nil {
		u.start()
		u.due = true // the rest of the batch was due already: it follows at once
	}
}

// cutTurn keeps the start of each text of t, each marked as cut.
func cutTurn(t Turn) Turn {
	t.UserText = cutText(t.UserText)
	t.ReplyText = cutText(t.ReplyText)
	ctx := t.Context
	if len(ctx) > 3 {
		ctx = ctx[len(ctx)-3:] // the latest earlier messages matter most
	}
	t.Context = make([]ContextMessage, len(ctx))
	for i, c := range ctx {
		c.Text = cutText(c.Text)
		t.Context[i] = c
	}
	return t
}

func cutText(s string) string {
	if len(s) <= cutLimit {
		return s
	}
	return text.Cut(s, cutLimit) + fmt.Sprintf("\n[mnemo: cut here; the message was %d bytes, too long for the model's context]", len(s))
}

// failedDir holds the turns the reflector gave up on.
func (j *journal) failedDir() string { return filepath.Join(j.dir, "failed") }

// failedRecord is the last line of a failed file: why it was given up.
type failedRecord struct {
	Kind  string    `json:"kind"`
	User  string    `json:"user"`
	Error string    `json:"error"`
	Time  time.Time `json:"time"`
}

// moveFailed writes the turns (and the run's records) of a run that failed
// MaxAttempts times to failed/<user>-<time>-<run>.jsonl, atomically, for an
// admin to look at: `mnemo memory check` lists them.
func (j *journal) moveFailed(user string, entries []entry, run *runLog, cause error, now time.Time) error {
	dir := j.failedDir()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("%w: create %s: %w", mnemo.ErrStorage, dir, err)
	}
	b, err := encodeJournal(entries, run)
	if err != nil {
		return err
	}
	last, _ := json.Marshal(failedRecord{Kind: "failed", User: user, Error: cause.Error(), Time: now.UTC()})
	b.Write(append(last, '\n'))
	id := "x"
	if run != nil {
		id = run.id
	}
	rel := "failed/" + fmt.Sprintf("%s-%s-%s%s", user, now.UTC().Format("20060102T150405Z"), id, journalExt)
	if err := j.install(rel, b.Bytes()); err != nil {
		name := filepath.Join(j.dir, filepath.FromSlash(rel))
		_ = os.Remove(name) // renamed but not durable: the turns stay journaled instead
		return fmt.Errorf("write %s: %w", name, err)
	}
	return nil
}

// Failed is a file of turns the reflector gave up on.
type Failed struct {
	Path string // the file
	User string // whose turns
}

// FailedTurns lists the files of turns the reflector gave up on, in
// stateDir; none is not an error.
func FailedTurns(stateDir string) ([]Failed, error) {
	dir := filepath.Join(stateDir, "reflector", "failed")
	des, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Failed
	for _, de := range des {
		name, ok := strings.CutSuffix(de.Name(), journalExt)
		if !ok || strings.HasPrefix(name, ".") {
			continue
		}
		// <user>-<time>-<run>: user names may hold '-' themselves.
		user := name
		for range 2 {
			if i := strings.LastIndexByte(user, '-'); i > 0 {
				user = user[:i]
			}
		}
		out = append(out, Failed{Path: filepath.Join(dir, de.Name()), User: user})
	}
	return out, nil
}
