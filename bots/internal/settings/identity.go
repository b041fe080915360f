package settings

import (
	"fmt"
	"strings"

	"github.com/mnemo-agent/mnemo"
)

// CheckIdentities checks one platform's accounts among the config's
// identities ("<platform>:<account>" → memory user name; the map holds
// every platform's, and the others are skipped): each account must pass
// valid and each name must be a memory user name. form says what an
// account looks like, for the error.
func CheckIdentities(platform, form string, identities map[string]string, valid func(account string) bool) error {
	for k, v := range identities {
		account, ok := strings.CutPrefix(k, platform+":")
		if !ok {
			continue
		}
		if !valid(account) {
			return fmt.Errorf("%s: identity %q is not of the form %s", platform, k, form)
		}
		if mnemo.ValidateUser(v) != nil {
			return fmt.Errorf("%s: identity %q links to %q, which is not a valid memory user name (letters, digits, '.', '_', '-'; 1-64; not starting with '.')", platform, k, v)
		}
	}
	return nil
}
