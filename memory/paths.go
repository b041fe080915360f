package memory

import (
	"errors"
	"fmt"

	"github.com/mnemo-agent/mnemo"
)

// ErrBadPath is wrapped by every error about a path outside the grammar.
var ErrBadPath = errors.New("bad memory path")

// ErrBadUser is wrapped by every error about a user name outside the grammar.
var ErrBadUser = mnemo.ErrBadUser

// Kind tells fact files from episode files.
type Kind int

// The two kinds of memory file.
const (
	KindFact Kind = iota + 1
	KindEpisode
	// KindRollup: episodes/YYYY-Qn.md or episodes/YYYY.md, a summary of
	// old months mnemo writes (rollup.go); the model's tools only read it.
	KindRollup
)

const (
	factsDir    = "facts"
	episodesDir = "episodes"
	maxNameLen  = 64
)

const pathHelp = "memory paths are facts/<name>.md (name: 1-64 letters, digits, '-' or '_') or episodes/YYYY-MM.md, either with .shared before .md for a file made in a channel; episodes/YYYY-Qn.md and episodes/YYYY.md are roll-ups of old months"

// sharedSuffix marks the name of a file a channel's reflection made
// (facts/<name>.shared.md, episodes/YYYY-MM.shared.md): what is learned in
// a channel goes to a file of its own, so it never lands in a private
// file nor a private one in it. No other dot is in the grammar, so these
// names never collide with a person's.
const sharedSuffix = ".shared"

// ParsePath checks p against the path grammar byte by byte — nothing is
// decoded, cleaned or normalised first, so "%2e%2e", "./", "\\" and
// look-alike dots are simply not in the grammar.
func ParsePath(p string) (Kind, error) {
	switch {
	case len(p) > len(factsDir)+1 && p[:len(factsDir)+1] == factsDir+"/":
		name, ok := cutSuffix(p[len(factsDir)+1:], ".md")
		if ok && validName(trimShared(name)) {
			return KindFact, nil
		}
	case len(p) > len(episodesDir)+1 && p[:len(episodesDir)+1] == episodesDir+"/":
		month, ok := cutSuffix(p[len(episodesDir)+1:], ".md")
		if ok && validMonth(trimShared(month)) {
			return KindEpisode, nil
		}
		if _, _, roll := rollupSpan(month); ok && roll {
			return KindRollup, nil // never .shared: a roll-up is its owner's, made by mnemo
		}
	}
	return 0, fmt.Errorf("%w %q: %s", ErrBadPath, p, pathHelp)
}

// trimShared drops one sharedSuffix from the end of a name.
func trimShared(name string) string {
	if n, ok := cutSuffix(name, sharedSuffix); ok {
		return n
	}
	return name
}

// IsSharedName reports whether a valid path p is a channel reflection's
// file name (facts/<name>.shared.md, episodes/YYYY-MM.shared.md).
func IsSharedName(p string) bool {
	_, ok := cutSuffix(p, sharedSuffix+".md")
	return ok
}

// SharedName is the shared file of a valid path p: facts/user.md gives
// facts/user.shared.md; a shared name is its own.
func SharedName(p string) string {
	if IsSharedName(p) {
		return p
	}
	return p[:len(p)-len(".md")] + sharedSuffix + ".md"
}

// PrivateName is the plain name of a valid path p: facts/user.shared.md
// gives facts/user.md; a plain name is its own.
func PrivateName(p string) string {
	if !IsSharedName(p) {
		return p
	}
	return p[:len(p)-len(sharedSuffix+".md")] + ".md"
}

func cutSuffix(s, suffix string) (string, bool) {
	if len(s) < len(suffix) || s[len(s)-len(suffix):] != suffix {
		return "", false
	}
	return s[:len(s)-len(suffix)], true
}

func validName(name string) bool {
	if len(name) == 0 || len(name) > maxNameLen {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !isAlnum(c) && c != '-' && c != '_' {
			return false
		}
	}
	return true
}

// validMonth accepts YYYY-MM with a month 01–12.
func validMonth(m string) bool {
	if len(m) != 7 || m[4] != '-' {
		return false
	}
	for i, c := range []byte(m) {
		if i != 4 && (c < '0' || c > '9') {
			return false
		}
	}
	mm := int(m[5]-'0')*10 + int(m[6]-'0')
	return mm >= 1 && mm <= 12
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// ValidateUser checks a memory user name; the grammar is mnemo.ValidateUser's.
func ValidateUser(name string) error { return mnemo.ValidateUser(name) }

// ValidateOwner checks the name of a memory folder: a user's, or a
// channel's ("#slack-T01-C02"; see mnemo.ChannelKey).
func ValidateOwner(name string) error { return mnemo.ValidateOwner(name) }
