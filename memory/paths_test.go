package memory

import (
	"errors"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestParsePath(t *testing.T) {
	good := map[string]Kind{
		"facts/user.md":      KindFact,
		"facts/a.md":         KindFact,
		"facts/my-proj_2.md": KindFact,
		"facts/" + strings.Repeat("x", 64) + ".md": KindFact,
		"episodes/2026-02.md":                      KindEpisode,
		"episodes/1999-12.md":                      KindEpisode,
		"episodes/2026-Q1.md":                      KindRollup,
		"episodes/2026-Q4.md":                      KindRollup,
		"episodes/2026.md":                         KindRollup,
	}
	for p, want := range good {
		got, err := ParsePath(p)
		if err != nil || got != want {
			t.Errorf("ParsePath(%q) = %v, %v; want %v", p, got, err, want)
		}
	}
	bad := []string{
		"", "facts/", "facts/.md", "facts/user", "facts/user.MD", "facts/user.md/", "/facts/user.md",
		"facts//user.md", "./facts/user.md", "facts/./user.md", "facts/../facts/user.md", "../bob/facts/user.md",
		"facts/..md", "facts/%2e%2e.md", "facts/%2e%2e/x.md", "facts\\user.md", "facts/us\\er.md",
		"facts/user.md\x00", "facts/us\x00er.md", "facts/ user.md", "facts/user .md", "facts/usér.md",
		"facts/\uff0e\uff0e.md", "facts/user\u200b.md", "facts/" + strings.Repeat("x", 65) + ".md",
		"episodes/2026-2.md", "episodes/2026-00.md", "episodes/2026-13.md", "episodes/26-02.md", "episodes/2026_02.md",
		"episodes/2026-02-01.md", "episodes/abcd-02.md", "episodes/2026-0a.md", "episodes/user.md", "facts/2026-02.md/x",
		"episodes/2026-Q5.md", "episodes/2026-Q0.md", "episodes/02026.md", "episodes/2026-q1.md", "episodes/2026-Q1.shared.md",
		"episodes/2026.shared.md", "episodes/2026-Q.md", "episodes/2026-Q12.md", "episodes/202.md", "episodes/2O26.md", "episodes/2026-H1.md",
		"notes/user.md", "FACTS/user.md", "facts", "episodes", "user.md", "data/memory/alice/facts/user.md",
	}
	for _, p := range bad {
		if k, err := ParsePath(p); err == nil || !errors.Is(err, ErrBadPath) {
			t.Errorf("ParsePath(%q) = %v, %v; want ErrBadPath", p, k, err)
		} else if !strings.Contains(err.Error(), "facts/<name>.md") {
			t.Errorf("ParsePath(%q) error does not say the grammar: %v", p, err)
		}
	}
}

func TestValidateUser(t *testing.T) {
	for _, u := range []string{"alice", "slack-T01ABC-U02DEF", "discord-80351110224678912", "a.b_c-d", "A", strings.Repeat("u", 64)} {
		if err := ValidateUser(u); err != nil {
			t.Errorf("ValidateUser(%q) = %v", u, err)
		}
	}
	for _, u := range []string{"", ".", "..", ".hidden", "a/b", "a\\b", "al ice", "alice\x00", "ålice", strings.Repeat("u", 65), "a:b", "%2e%2e"} {
		if err := ValidateUser(u); !errors.Is(err, ErrBadUser) {
			t.Errorf("ValidateUser(%q) = %v; want ErrBadUser", u, err)
		}
	}
}

var pathGrammar = regexp.MustCompile(`^(facts/[A-Za-z0-9_-]{1,64}(\.shared)?\.md|episodes/[0-9]{4}-(0[1-9]|1[0-2])(\.shared)?\.md|episodes/[0-9]{4}(-Q[1-4])?\.md)$`)

// FuzzParsePath: anything accepted matches the grammar and is a plain
// local path that cannot leave the user's folder.
func FuzzParsePath(f *testing.F) {
	for _, s := range []string{"facts/user.md", "episodes/2026-02.md", "episodes/2026-Q1.md", "episodes/2026.md", "episodes/2026-Q5.md", "../x", "facts/../../etc/passwd.md", "facts/%2e%2e.md", "episodes/2026-13.md", "facts/\uff0e.md"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		if _, err := ParsePath(p); err != nil {
			return
		}
		if !pathGrammar.MatchString(p) {
			t.Fatalf("accepted %q outside the grammar", p)
		}
		if !filepath.IsLocal(p) || filepath.Clean(p) != p || strings.Contains(p, "..") {
			t.Fatalf("accepted %q that is not a clean local path", p)
		}
	})
}

// FuzzValidateUser: an accepted user name is one clean path element.
func FuzzValidateUser(f *testing.F) {
	for _, s := range []string{"alice", "..", ".x", "a/b", "slack-T1-U2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, u string) {
		if ValidateUser(u) != nil {
			return
		}
		if !filepath.IsLocal(u) || filepath.Base(u) != u || strings.HasPrefix(u, ".") || len(u) > 64 {
			t.Fatalf("accepted user name %q that is not one plain folder name", u)
		}
	})
}
