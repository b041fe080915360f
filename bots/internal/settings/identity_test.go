package settings

import (
	"strings"
	"testing"
)

func TestCheckIdentities(t *testing.T) {
	digits := func(s string) bool { return s != "" && strings.Trim(s, "0123456789") == "" }
	for _, tc := range []struct {
		ids  map[string]string
		want string // "" = no error
	}{
		{nil, ""},
		{map[string]string{"discord:123": "ada", "slack:T1/U1": "ada", "other": "x"}, ""},
		{map[string]string{"discord:12a": "ada"}, `discord: identity "discord:12a" is not of the form discord:USER_ID`},
		{map[string]string{"discord:": "ada"}, "not of the form"},
		{map[string]string{"discord:1": "../x"}, `links to "../x", which is not a valid memory user name`},
		{map[string]string{"discord:1": ".x"}, "not a valid memory user name"},
		{map[string]string{"slack:whatever": ".x"}, ""}, // another platform's
	} {
		err := CheckIdentities("discord", "discord:USER_ID", tc.ids, digits)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%v: %v", tc.ids, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%v: %v; want %q", tc.ids, err, tc.want)
		}
	}
}
