package memory

import (
	"errors"
	"fmt"

	"github.com/mnemo-agent/mnemo/agent"
)

// ErrBadPath is wrapped by every error about a path outside the grammar.
var ErrBadPath = errors.New("bad memory path")

// ErrBadUser is wrapped by every error about a user name outside the grammar.
var ErrBadUser = agent.ErrBadUser

// Kind tells fact files from episode files.
type Kind int

// The two kinds of memory file.
const (
	KindFact Kind = iota + 1
	KindEpisode
)

const (
	factsDir    = "facts"
	episodesDir = "episodes"
	maxNameLen  = 64
)

const pathHelp = "memory paths are facts/<name>.md (name: 1-64 letters, digits, '-' or '_') or episodes/YYYY-MM.md"

// ParsePath checks p against the path grammar byte by byte — nothing is
// decoded, cleaned or normalised first, so "%2e%2e", "./", "\\" and
// look-alike dots are simply not in the grammar.
func ParsePath(p string) (Kind, error) {
	switch {
	case len(p) > len(factsDir)+1 && p[:len(factsDir)+1] == factsDir+"/":
		name, ok := cutSuffix(p[len(factsDir)+1:], ".md")
		if ok && validName(name) {
			return KindFact, nil
		}
	case len(p) > len(episodesDir)+1 && p[:len(episodesDir)+1] == episodesDir+"/":
		month, ok := cutSuffix(p[len(episodesDir)+1:], ".md")
		if ok && validMonth(month) {
			return KindEpisode, nil
		}
	}
	return 0, fmt.Errorf("%w %q: %s", ErrBadPath, p, pathHelp)
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

// ValidateUser checks a memory user name; the grammar is agent.ValidateUser's.
func ValidateUser(name string) error { return agent.ValidateUser(name) }
