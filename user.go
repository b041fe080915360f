package mnemo

import (
	"errors"
	"fmt"
	"strings"
)

// ErrBadUser is wrapped by every error about a memory user name outside
// the grammar.
var ErrBadUser = errors.New("bad memory user name")

// ValidateUser checks a memory user name (Task.User): 1–64 ASCII letters,
// digits, '.', '_' or '-', not starting with '.' — so it is always one
// plain folder or file name. It lives here, in the package every other
// one may import, so memory, the reflector, the adapters and the
// configuration all apply one grammar.
func ValidateUser(name string) error {
	if !validName(name) {
		return fmt.Errorf("%w %q: use 1-64 letters, digits, '.', '_' or '-', not starting with '.'", ErrBadUser, name)
	}
	return nil
}

func validName(name string) bool {
	ok := len(name) > 0 && len(name) <= 64 && name[0] != '.'
	for i := 0; ok && i < len(name); i++ {
		c := name[i]
		ok = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
	}
	return ok
}

// ChannelPrefix starts the name of every channel's memory: '#' is in no
// user name, so no person can take a channel's folder, nor a channel a
// person's.
const ChannelPrefix = "#"

// ChannelKey is the memory name of a channel: "#" and the platform and
// its ids joined by '-' ("#slack-T01-C02", "#discord-80351110224678912").
// A missing id, or one outside the user-name grammar, gives "" (no
// channel memory).
func ChannelKey(platform string, ids ...string) string {
	for _, id := range ids {
		if id == "" {
			return ""
		}
	}
	name := strings.Join(append([]string{platform}, ids...), "-")
	if !validName(name) {
		return ""
	}
	return ChannelPrefix + name
}

// IsChannel reports whether a memory name is a channel's.
func IsChannel(name string) bool { return strings.HasPrefix(name, ChannelPrefix) }

// ValidateChannel checks a channel's memory name: "#" and a name of the
// user grammar.
func ValidateChannel(name string) error {
	if !IsChannel(name) || !validName(name[len(ChannelPrefix):]) {
		return fmt.Errorf("%w %q: a channel's memory is named '#' and 1-64 letters, digits, '.', '_' or '-' (e.g. #slack-T01-C02)", ErrBadUser, name)
	}
	return nil
}

// ValidateOwner checks the name of a memory folder: a user's or a
// channel's.
func ValidateOwner(name string) error {
	if IsChannel(name) {
		return ValidateChannel(name)
	}
	return ValidateUser(name)
}

// Scope is what of the memory one task or one reflection may see: the
// speaker's files (all of them, or with Shared only those whose header
// says "> Visibility: shared") and, in a channel, that channel's memory
// (Channel, a ChannelKey) shown under the path prefix "channel/". The
// model is given exactly this and nothing else: privacy is what it is
// given, never what it is asked.
type Scope struct {
	User    string
	Channel string // "" in a DM or the terminal
	Shared  bool   // only the speaker's shared files
}
