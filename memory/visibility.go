package memory

import (
	"errors"
	"fmt"
	"strings"
)

// A memory file is private unless its header block holds the exact line
// "> Visibility: shared" (trailing spaces, tabs and a CR aside). The header
// block is the file's first lines up to the first that is not blank, not a
// quote line starting with ">" at its first byte, and not the file's one
// "# Title": a list item, a "##" entry, a second title, a fence, an indented
// line or a paragraph ends it. It must end, newline included, within the
// first summaryHead bytes the index reads; a line cut there does not count.
// A visibility line anywhere else (in a fence, under a list item, indented,
// past the header) is text, not a header. "> Visibility: private", any other
// value or spelling, or no line is private, and so is a header that says
// both: a typo or a doubt never shares a file. Existing files are therefore
// private.
const (
	visibilityKey     = "visibility:"
	visibilityShared  = "> Visibility: shared"
	visibilityPrivate = "> Visibility: private"
)

// visibilityValue returns the value after "> Visibility:" when line is a
// header's quote line naming visibility, in any spelling (so that a
// near-miss reads as private and SetVisibility replaces it).
func visibilityValue(line string) (string, bool) {
	t, ok := strings.CutPrefix(line, ">")
	if !ok {
		return "", false
	}
	t = strings.TrimSpace(t)
	if len(t) < len(visibilityKey) || !strings.EqualFold(t[:len(visibilityKey)], visibilityKey) {
		return "", false
	}
	return strings.TrimSpace(t[len(visibilityKey):]), true
}

// headerLine reports whether line continues a header block in which a
// title has (titled) or has not been seen, and whether it is that title.
func headerLine(line string, titled bool) (ok, title bool) {
	switch {
	case strings.TrimRight(line, " \t\r") == "", strings.HasPrefix(line, ">"):
		return true, false
	case !titled && strings.HasPrefix(line, "# "):
		return true, true
	}
	return false, false
}

// IsShared reports whether a memory file's text marks it shared.
func IsShared(text string) bool {
	return isSharedHead(text[:min(len(text), summaryHead)], len(text) > summaryHead)
}

// isSharedHead is IsShared on the first bytes of a file, cut when more
// follow: the last line of a cut head may be only part of a line
// ("> Visibility: shared" of "> Visibility: sharedNOT"), so it is not read.
func isSharedHead(head string, cut bool) bool {
	if cut {
		head = head[:strings.LastIndexByte(head, '\n')+1]
	}
	head = strings.TrimPrefix(head, "\ufeff")
	shared, titled := false, false
	for line := range strings.SplitSeq(head, "\n") {
		ok, title := headerLine(line, titled)
		if !ok {
			break
		}
		titled = titled || title
		if _, vis := visibilityValue(line); vis {
			if strings.TrimRight(line, " \t\r") != visibilityShared {
				return false
			}
			shared = true
		}
	}
	return shared
}

// SetVisibility returns text with its header marking it shared or
// private: every visibility line of the header block is dropped, and the
// one wanted goes under its "> Summary:" line (else under its "# Title",
// else first). Private with no line before stays without one (no line is
// private); private where a line was says so in words. A byte order mark
// stays first, and the header under it is read as IsShared reads it.
func SetVisibility(text string, shared bool) string {
	lead := ""
	if t, ok := strings.CutPrefix(text, "\ufeff"); ok {
		lead, text = "\ufeff", t
	}
	lines := strings.Split(text, "\n")
	out := make([]string, 0, len(lines)) // one more line may be added
	const unset = -1
	had, at, title := false, unset, unset
	header, titled := true, false
	for _, line := range lines {
		if header {
			ok, isTitle := headerLine(line, titled)
			titled = titled || isTitle
			switch {
			case !ok:
				header = false
			case isTitle:
				title = len(out) + 1
			default:
				if _, vis := visibilityValue(line); vis {
					had = true
					continue
				}
				if _, ok := summaryValue(line); ok && at == unset {
					at = len(out) + 1
				}
			}
		}
		out = append(out, line)
	}
	var want string
	switch {
	case shared:
		want = visibilityShared
	case had:
		want = visibilityPrivate
	default:
		return lead + strings.Join(out, "\n")
	}
	if at == unset {
		at = max(title, 0)
	}
	if n := len(lead) + len(strings.Join(out[:at], "\n")); n+len(want)+2 > summaryHead {
		at = 0 // past what the index reads: first, so it counts
	}
	out = append(out[:at], append([]string{want}, out[at:]...)...)
	return lead + strings.Join(out, "\n")
}

// visPolicy is what a write may touch and leaves behind: visKeep any file,
// as it is (a person, an admin, a channel's own memory); visShared only a
// shared file or a new one, left shared (a channel's reflection); visPrivate
// only a private file or a new one, left private (a DM's reflection).
type visPolicy int

const (
	visKeep visPolicy = iota
	visShared
	visPrivate
)

// errNotShared: a channel's write found a private file at its target. The
// view answers it without saying what is there.
var errNotShared = errors.New("not a shared file")

// SharedFileError refuses a private conversation's write to a shared file:
// what is said in a DM stays in private files.
type SharedFileError struct{ Path string }

func (e *SharedFileError) Error() string {
	alt := "another file"
	if IsSharedName(e.Path) {
		alt = PrivateName(e.Path)
	}
	return fmt.Sprintf("%s is shared with channels (its header says %q): what is said in a private conversation is kept in private files only; write it to %s instead",
		e.Path, visibilityShared, alt)
}

// guard checks the file a write starts from against the policy, and marks
// what the write makes: a change never moves text between a private file
// and a shared one, whatever the model wrote in the header.
func (vis visPolicy) guard(p string, compute func(cur []byte, v Version) ([]byte, error)) func(cur []byte, v Version) ([]byte, error) {
	if vis == visKeep {
		return compute
	}
	return func(cur []byte, v Version) ([]byte, error) {
		shared := vis == visShared
		if !shared && IsSharedName(p) {
			return nil, &SharedFileError{Path: p} // a channel's name, whatever it holds now
		}
		if v.Exists && len(cur) > 0 && IsShared(string(cur)) != shared {
			if shared {
				return nil, errNotShared
			}
			return nil, &SharedFileError{Path: p}
		}
		out, err := compute(cur, v)
		if v.Exists && len(cur) == 0 && shared && !errors.Is(err, errEmptyOnDisk) {
			// An empty file says nothing: it is private. Checked before
			// the change's own refusal ("not read first"), which the view
			// could never satisfy; an append waits out a save as usual.
			return nil, errNotShared
		}
		if err != nil {
			return nil, err
		}
		if IsShared(string(out)) != shared {
			out = []byte(SetVisibility(string(out), shared))
		}
		return out, nil
	}
}

// NotWritableError refuses a channel's write to a name whose shared file a
// person has made private.
type NotWritableError struct{ Path string }

func (e *NotWritableError) Error() string {
	return fmt.Sprintf("%v: %s cannot be written from this channel; choose another file name", ErrBadPath, e.Path)
}

// Unwrap makes the error ErrBadPath for errors.Is.
func (e *NotWritableError) Unwrap() error { return ErrBadPath }

// SetShared marks file p shared with channels (shared) or private, as its
// owner asks (/memory share, /memory private): only the header's
// visibility line changes, atomically, through the one write path (history
// and hooks see a write). A file already so is left as it is.
func (u *User) SetShared(p string, shared bool, commit CommitHook) (Version, error) {
	d, err := u.Read(p)
	if err != nil {
		return Version{}, err
	}
	if IsShared(d.Text) == shared {
		return d.Version, nil
	}
	return u.update(p, ChangeWrite, false, commit, func(cur []byte, v Version) ([]byte, error) {
		if !v.Exists {
			return nil, notFound(p)
		}
		return []byte(SetVisibility(string(cur), shared)), nil
	})
}
