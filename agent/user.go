package agent

import (
	"errors"
	"fmt"
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
	ok := len(name) > 0 && len(name) <= 64 && name[0] != '.'
	for i := 0; ok && i < len(name); i++ {
		c := name[i]
		ok = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
	}
	if !ok {
		return fmt.Errorf("%w %q: use 1-64 letters, digits, '.', '_' or '-', not starting with '.'", ErrBadUser, name)
	}
	return nil
}
