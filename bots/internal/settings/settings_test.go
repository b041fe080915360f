package settings

import (
	"context"
	"strings"
	"testing"

	"github.com/mnemo-agent/mnemo"
)

type nopHandler struct{}

func (nopHandler) Handle(context.Context, mnemo.Task) (mnemo.Reply, error) { return mnemo.Reply{}, nil }

func TestSettingsCheck(t *testing.T) {
	check := func(apiURL, channelMemory string, ids map[string]string, h mnemo.Handler) (string, string, string, error) {
		s := Common{Platform: "chat", APIURLVar: "CHAT_API_URL", DefaultAPIURL: "https://chat.example/api/",
			APIURL: &apiURL, ChannelMemory: &channelMemory, Identities: ids, IdentityForm: "chat:ID",
			ValidAccount: func(a string) bool { return a == "ok" }, Handler: h}
		u, err := s.Check()
		if err != nil {
			return "", "", "", err
		}
		return apiURL, u.String(), channelMemory, nil
	}
	// Defaults, and a final "/" on both the setting and the parsed URL.
	raw, parsed, cm, err := check("", "", nil, nopHandler{})
	if err != nil || raw != "https://chat.example/api/" || parsed != raw || cm != mnemo.ChannelMemoryRead {
		t.Fatalf("defaults: %q %q %q %v", raw, parsed, cm, err)
	}
	raw, parsed, cm, err = check("http://127.0.0.1:9/x", "off", map[string]string{"chat:ok": "ada"}, nopHandler{})
	if err != nil || raw != "http://127.0.0.1:9/x/" || parsed != raw || cm != "off" {
		t.Fatalf("given: %q %q %q %v", raw, parsed, cm, err)
	}
	for _, tc := range []struct {
		apiURL, cm string
		ids        map[string]string
		h          mnemo.Handler
		want       string
	}{
		{"ftp://user:secret@host/", "", nil, nopHandler{},
			`chat: CHAT_API_URL "ftp://…@host/" is not an http(s) URL; leave it unset for https://chat.example/api/`},
		{"https://", "", nil, nopHandler{}, "is not an http(s) URL"},
		{"", "all", nil, nopHandler{}, `chat: chat.channelMemory is "all"; use full, read or off`},
		{"", "", map[string]string{"chat:bad": "ada"}, nopHandler{}, `chat: identity "chat:bad" is not of the form chat:ID`},
		{"", "", nil, nil, "chat: config is missing Handler"},
	} {
		_, _, _, err := check(tc.apiURL, tc.cm, tc.ids, tc.h)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Check(%q, %q, %v) = %v; want %q", tc.apiURL, tc.cm, tc.ids, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("the error shows the URL's password: %v", err)
		}
	}
}
