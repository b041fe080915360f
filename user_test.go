package mnemo

import (
	"errors"
	"strings"
	"testing"
)

func TestValidateUser(t *testing.T) {
	for _, u := range []string{"alice", "slack-T01ABC-U02DEF", "discord-80351110224678912", "a.b_c-d", "A", strings.Repeat("u", 64), "az", "AZ", "09"} {
		if err := ValidateUser(u); err != nil {
			t.Errorf("ValidateUser(%q) = %v", u, err)
		}
	}
	for _, u := range []string{"", ".", "..", ".hidden", "a/b", "a\\b", "al ice", "alice\x00", "ålice", strings.Repeat("u", 65), "a:b", "a`", "a{", "a@", "a[", "a/"} {
		if err := ValidateUser(u); !errors.Is(err, ErrBadUser) || !strings.Contains(err.Error(), "1-64 letters") {
			t.Errorf("ValidateUser(%q) = %v; want ErrBadUser with the rule", u, err)
		}
	}
}
