package text

import (
	"strings"
	"testing"
)

func TestRedactURLs(t *testing.T) {
	for in, want := range map[string]string{
		"http://user:pass@host:8080/v1":                       "http://…@host:8080/v1",
		"Get \"https://k:s3cr3t@api.example.com/x\": refused": "Get \"https://…@api.example.com/x\": refused",
		"wss://tok@gateway/ and HTTP://a@b":                   "wss://…@gateway/ and HTTP://…@b",
		"http://host/path@not-userinfo":                       "http://host/path@not-userinfo",
		"mail me@example.com":                                 "mail me@example.com",
		"http://host:1/v1":                                    "http://host:1/v1",
	} {
		if got := RedactURLs(in); got != want {
			t.Errorf("RedactURLs(%q) = %q; want %q", in, got, want)
		}
	}
}

func FuzzRedactURLs(f *testing.F) {
	f.Add("http://user:secret@host/x")
	f.Add("a://:secret@")
	f.Fuzz(func(t *testing.T, s string) {
		got := RedactURLs(s)
		// No "scheme://something@" with a non-empty userinfo is left.
		if m := userinfoRE.Get().FindString(got); m != "" && !strings.HasSuffix(m, "…@") {
			t.Fatalf("left %q in %q", m, got)
		}
	})
}
