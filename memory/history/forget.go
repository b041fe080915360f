package history

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"github.com/mnemo-agent/mnemo/memory"
)

// notePending is the note, in a file's history folder, of lines being
// forgotten (Forgetting): while it is there every version recorded is
// kept without them, and a crash before Forgot is finished at the next
// look at the folder. It is neither a version (.json, .md) nor a temp.
const notePending = "forget.pending"

type pendingNote struct {
	Lines []string `json:"lines"`
}

// Forgetting makes user's file p forget lines (memory.Commit.Forgotten)
// in every version kept: the note first (durable), then each version
// without them. Versions recorded until Forgot (the text the change
// replaces) are kept without them too.
func (s *Store) Forgetting(user, p string, lines []string) error {
	d, err := dir(user, p)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	prev, err := s.pending(d)
	if err != nil {
		return err
	}
	all := append(prev, lines...)
	if err := s.root.MkdirAll(d, 0o700); err != nil {
		return fmt.Errorf("history: %w", err)
	}
	data, _ := json.Marshal(pendingNote{Lines: all})
	if err := s.write(path.Join(d, notePending), data); err != nil {
		return err
	}
	if err := s.syncDir(d); err != nil {
		return err
	}
	if s.forgetting == nil {
		s.forgetting = map[string]bool{}
	}
	s.forgetting[d] = true
	return s.scrub(d, all)
}

// Forgot ends Forgetting for user's file p: the versions recorded since
// are scrubbed too and the note removed.
func (s *Store) Forgot(user, p string) error {
	d, err := dir(user, p)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.forgetting, d)
	return s.finish(d)
}

// finish scrubs d's versions of the lines its note names and removes the
// note; nothing when there is none. s.mu is held.
func (s *Store) finish(d string) error {
	lines, err := s.pending(d)
	if err != nil || lines == nil {
		return err
	}
	if err := s.scrub(d, lines); err != nil {
		return err
	}
	if err := s.root.Remove(path.Join(d, notePending)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("history: %w", err)
	}
	return s.syncDir(d)
}

// pending is the lines of d's note; nil when there is none. s.mu is held.
func (s *Store) pending(d string) ([]string, error) {
	data, err := s.root.ReadFile(path.Join(d, notePending))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	var n pendingNote
	if err := json.Unmarshal(data, &n); err != nil {
		return nil, fmt.Errorf("history: %s: %w; delete it once the lines it names are gone by hand", path.Join(d, notePending), err)
	}
	if n.Lines == nil {
		n.Lines = []string{}
	}
	return n.Lines, nil
}

// scrub rewrites each version of d without the lines: its text, then its
// record (size and checksum), so that a crash between the two is mended
// by the next scrub (a record not matching its text is written again).
// s.mu is held.
func (s *Store) scrub(d string, lines []string) error {
	versions, _, err := s.readRaw(d)
	if err != nil {
		return err
	}
	drop := memory.Forgets(lines)
	for _, v := range versions {
		if v.Deleted {
			continue
		}
		name := path.Join(d, v.ID+".md")
		data, err := s.root.ReadFile(name)
		if err != nil {
			return fmt.Errorf("history: %w", err)
		}
		kept := without(data, drop)
		sum := sha256.Sum256(kept)
		if hex.EncodeToString(sum[:]) == v.SHA256 && len(kept) == len(data) {
			continue
		}
		if len(kept) != len(data) {
			if err := s.write(name, kept); err != nil {
				return err
			}
		}
		v.SHA256, v.Size = hex.EncodeToString(sum[:]), int64(len(kept))
		meta, _ := json.Marshal(v)
		if err := s.write(path.Join(d, v.ID+".json"), append(meta, '\n')); err != nil {
			return err
		}
	}
	return s.syncDir(d)
}

// without is data without the lines drop names.
func without(data []byte, drop func(string) bool) []byte {
	lines := strings.SplitAfter(string(data), "\n")
	var b strings.Builder
	for _, l := range lines {
		if !drop(strings.TrimRight(l, "\r\n")) {
			b.WriteString(l)
		}
	}
	return []byte(b.String())
}
