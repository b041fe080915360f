package memory

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Roll-ups. Old episode months get a summary per quarter
// (episodes/2026-Q1.md) and per year (episodes/2026.md), written by mnemo
// (the reflector's roll-up job), never by the model's tools. The index
// and memory_list show a roll-up in place of the files it covers; the
// month files stay as they are, readable and searchable.

// ErrRollup is the error of a model's change to a roll-up file.
var ErrRollup = errors.New("roll-ups are written by mnemo")

// rollupError is ErrRollup for path p, saying where entries go instead.
func rollupError(p string) error {
	return fmt.Errorf("%s: %w; append to episodes/YYYY-MM.md", p, ErrRollup)
}

// RollupFingerprint starts the hidden line of a roll-up file that holds
// the hash of the files it was made from (see RollupHash).
const RollupFingerprint = "<!-- mnemo-rollup: "

// rollupSpan parses the name of a roll-up (the part of an episode path
// between "episodes/" and ".md"): YYYY-Qn (quarter 1–4) or YYYY (q 0).
func rollupSpan(name string) (year string, q int, ok bool) {
	switch {
	case len(name) == 4 && digits(name):
		return name, 0, true
	case len(name) == 7 && digits(name[:4]) && name[4:6] == "-Q" && name[6] >= '1' && name[6] <= '4':
		return name[:4], int(name[6] - '0'), true
	}
	return "", 0, false
}

func digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// IsRollup reports whether p is a roll-up path (episodes/YYYY-Qn.md or
// episodes/YYYY.md).
func IsRollup(p string) bool {
	name, ok := episodeName(p)
	if !ok {
		return false
	}
	_, _, ok = rollupSpan(name)
	return ok
}

// episodeName is the name of an episode path without folder and ".md".
func episodeName(p string) (string, bool) {
	rest, ok := strings.CutPrefix(p, episodesDir+"/")
	if !ok {
		return "", false
	}
	return cutSuffix(rest, ".md")
}

// QuarterPath is the roll-up of quarter q (1–4) of year (YYYY).
func QuarterPath(year string, q int) string {
	return episodesDir + "/" + year + "-Q" + strconv.Itoa(q) + ".md"
}

// YearPath is the roll-up of a year (YYYY).
func YearPath(year string) string { return episodesDir + "/" + year + ".md" }

// MonthOf is the month (YYYY-MM) of an episode month path, shared or not.
func MonthOf(p string) (string, bool) {
	name, ok := episodeName(p)
	if !ok {
		return "", false
	}
	if name = trimShared(name); !validMonth(name) {
		return "", false
	}
	return name, true
}

// coverers are the roll-ups that would cover episode file p: a month's
// quarter and year, a quarter's year; none for anything else.
func coverers(p string) (quarter, year string) {
	name, ok := episodeName(p)
	if !ok {
		return "", ""
	}
	if y, q, ok := rollupSpan(name); ok {
		if q == 0 {
			return "", ""
		}
		return "", YearPath(y)
	}
	m := trimShared(name)
	if !validMonth(m) {
		return "", ""
	}
	mm := int(m[5]-'0')*10 + int(m[6]-'0')
	return QuarterPath(m[:4], (mm-1)/3+1), YearPath(m[:4])
}

// foldRollups is files (List's order) with each file a roll-up there
// covers left out: what the index and memory_list show. files itself is
// returned when it holds no roll-up, so a memory without any costs one
// pass and no copy.
func foldRollups(files []FileInfo) []FileInfo {
	var have map[string]bool
	for _, f := range files {
		if IsRollup(f.Path) {
			if have == nil {
				have = map[string]bool{}
			}
			have[f.Path] = true
		}
	}
	if have == nil {
		return files
	}
	out := make([]FileInfo, 0, len(files))
	for _, f := range files {
		if q, y := coverers(f.Path); have[q] || have[y] {
			continue
		}
		out = append(out, f)
	}
	return out
}

// episodeKey is the order of an episode path among the others: the
// last month it holds (a month's own; a quarter's third; a year's
// December), then a year before its quarters before its months, so the
// newest work comes first however it is rolled up.
func episodeKey(p string) (ym string, rank int) {
	name, _ := episodeName(p)
	if y, q, ok := rollupSpan(name); ok {
		if q == 0 {
			return y + "-12", 2
		}
		return y + "-" + [...]string{"03", "06", "09", "12"}[q-1], 1
	}
	return trimShared(name), 0
}

// compareEpisodes orders two episode paths newest first (episodeKey),
// then by path, descending.
func compareEpisodes(a, b string) int {
	ka, ra := episodeKey(a)
	kb, rb := episodeKey(b)
	if c := strings.Compare(kb, ka); c != 0 {
		return c
	}
	if ra != rb {
		return rb - ra
	}
	return strings.Compare(b, a)
}

// RollupHash is the fingerprint of a roll-up's sources: the SHA-256 of
// each source's name and bytes, in the order given, hand edits included.
func RollupHash(names []string, texts []string) string {
	h := sha256.New()
	for i, n := range names {
		fmt.Fprintf(h, "%s\x00%d\x00", n, len(texts[i]))
		h.Write([]byte(texts[i]))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// RollupHashOf is the fingerprint a roll-up file's text records ("" when
// it has none: a file made or changed by hand without it).
func RollupHashOf(text string) string {
	i := strings.Index(text, RollupFingerprint)
	if i < 0 {
		return ""
	}
	rest := text[i+len(RollupFingerprint):]
	end := strings.Index(rest, " -->")
	if end < 0 {
		return ""
	}
	for _, f := range strings.Fields(rest[:end]) {
		if v, ok := strings.CutPrefix(f, "sha256="); ok {
			return v
		}
	}
	return ""
}

// WriteRollup replaces (or creates) roll-up file p with text, through the
// store's one write path (atomic, fsynced, told to OnChange for the
// history). base is the version the caller planned from: when p changed
// since (a person's edit), nothing is written and the error is a
// ConflictError.
func (u *User) WriteRollup(p, text string, base Version, commit CommitHook) (Version, error) {
	if !IsRollup(p) {
		return Version{}, fmt.Errorf("%w %q: not a roll-up (episodes/YYYY-Qn.md or episodes/YYYY.md)", ErrBadPath, p)
	}
	if len(text) > u.s.opts.WriteCap {
		return Version{}, fmt.Errorf("%s: %w: %d bytes, the limit is %d", p, ErrTooLarge, len(text), u.s.opts.WriteCap)
	}
	return u.update(p, ChangeWrite, true, commit, func(_ []byte, v Version) ([]byte, error) {
		if !v.Same(base) {
			return nil, conflict(p, base, v)
		}
		return []byte(text), nil
	})
}
