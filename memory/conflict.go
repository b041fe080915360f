package memory

import "fmt"

// KindError is the ErrBadPath of a change the path's kind of file does not
// take: only fact files are written whole, only episode files appended to.
type KindError struct {
	Path string
	Want Kind // the kind the change takes
}

func (e *KindError) Error() string {
	if e.Want == KindFact {
		return fmt.Sprintf("%v: %s is an episode file; only fact files (facts/<name>.md) are written whole", ErrBadPath, e.Path)
	}
	return fmt.Sprintf("%v: %s is a fact file; entries are appended to episode files (episodes/YYYY-MM.md) only", ErrBadPath, e.Path)
}

// Unwrap makes the error ErrBadPath for errors.Is.
func (e *KindError) Unwrap() error { return ErrBadPath }

// ConflictError is the ErrConflict of a write or patch based on a version
// that is no longer the file's: someone (a person, most likely) changed
// the file after the caller read it.
type ConflictError struct {
	Path string
	How  string // "was edited", "was deleted" or "was created"
	Also error  // of a patch: why it does not apply to the new text either; or nil
}

func (e *ConflictError) Error() string {
	s := fmt.Sprintf("%s %v (it %s after it was read)", e.Path, ErrConflict, e.How)
	if e.Also != nil {
		s += "; also: " + e.Also.Error()
	}
	return s
}

// Unwrap makes the error ErrConflict for errors.Is.
func (e *ConflictError) Unwrap() error { return ErrConflict }

func conflict(p string, base, cur Version) *ConflictError {
	how := "was edited"
	switch {
	case !cur.Exists:
		how = "was deleted"
	case !base.Exists:
		how = "was created"
	}
	return &ConflictError{Path: p, How: how}
}
