package memory

import (
	"fmt"
	"strings"
)

// CheckText reports what `mnemo memory check` would say about data saved
// as the memory file p: text that is not plain UTF-8, over the read cap,
// a fact without a title, no summary, torn episode entries. It is how
// `mnemo memory edit` checks a person's text before writing it. The
// Problems carry p and user; an invalid p is an error.
func (s *Store) CheckText(user, p string, data []byte) ([]Problem, error) {
	kind, err := ParsePath(p)
	if err != nil {
		return nil, err
	}
	var out []Problem
	s.textProblems(kind, data, func(k ProblemKind, format string, args ...any) {
		out = append(out, Problem{User: user, Path: p, Kind: k, Detail: fmt.Sprintf(format, args...)})
	})
	return out, nil
}

// textProblems is the content half of a check: what is wrong with the
// text of a file of kind, whatever the file system says about it.
func (s *Store) textProblems(kind Kind, data []byte, add func(ProblemKind, string, ...any)) {
	if n := int64(len(data)); n > int64(s.opts.ReadCap) {
		add(ProblemTooLarge, "is %s, over the %s read cap (memory.readCap): memory_read shows only its start; split or trim it", FormatSize(n), FormatSize(int64(s.opts.ReadCap)))
	}
	text := string(data)
	if why := badText(data); why != "" {
		add(ProblemBadText, "%s; the bot reads memory as UTF-8 Markdown text: save it as plain UTF-8 text, or delete it", why)
	}
	if kind == KindFact && !hasTitle(text) {
		// memory_write and memory_patch insist on one, anywhere in the file.
		add(ProblemNoTitle, `has no "# Title" line; the bot cannot rewrite or patch it until it has one: add one at the top`)
	}
	header, _, torn := parseEpisodes(text)
	summary := false
	for _, line := range strings.Split(header, "\n") {
		if v, ok := summaryValue(line); ok && v != "" {
			summary = true
		}
	}
	if !summary {
		add(ProblemNoSummary, `has no "> Summary: ..." line under its title; the index shows %q instead: add one`, FileSummary(text))
	}
	if kind == KindEpisode {
		for _, pr := range torn {
			add(ProblemTorn, "%s: add it, or remove the entry", pr)
		}
	}
}

// Replace writes content as the whole of memory file p (a fact or an
// episode file) for an administrator, atomically, only if the file is
// still at base (the version they started from; an absent Version for a
// new file): a change in between — a bot write, another edit — is
// ErrConflict and nothing is written. It checks only the path and the
// write cap; CheckText is for the content.
func (u *User) Replace(p, content string, base Version, commit CommitHook) (Version, error) {
	if _, err := ParsePath(p); err != nil {
		return Version{}, err
	}
	if len(content) > u.s.opts.WriteCap {
		return Version{}, fmt.Errorf("%s: %w: %d bytes, the limit is %d (memory.writeCap)", p, ErrTooLarge, len(content), u.s.opts.WriteCap)
	}
	return u.update(p, ChangeWrite, true, commit, func(_ []byte, v Version) ([]byte, error) {
		if !v.Same(base) {
			return nil, conflict(p, base, v)
		}
		return []byte(content), nil
	})
}

// Entry is one "## Title" entry of an episode file.
type Entry struct {
	Title, Summary, Date string
}

// Entries are the entries of an episode file's text, in file order.
func Entries(text string) []Entry {
	_, eps, _ := parseEpisodes(text)
	out := make([]Entry, len(eps))
	for i, e := range eps {
		out[i] = Entry{Title: e.Title, Summary: e.Summary, Date: e.Date}
	}
	return out
}
