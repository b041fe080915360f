package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mnemo-agent/mnemo/bots/registry"
	"github.com/mnemo-agent/mnemo/cmd/internal/config"
	"github.com/mnemo-agent/mnemo/memory"
)

// `mnemo memory search` prints the entries that match, best first, each
// as "path:line · heading · date" and its text; --json an array of
// {path, heading, line, date, text, score} with the text whole.
func TestMemorySearch(t *testing.T) {
	data, env := memoryFixture(t)
	putFile(t, filepath.Join(data, "#slack-T1-C1", "facts", "decisions.md"), "# Decisions\n\n- Release: ship on Friday\n")
	cli(t, env, "memory", "search", "alice", "fixing", "the", "logger").want(t, 0,
		"episodes/2026-01.md:5 · Logger fix · 2026-01-05\n  - Summary: logger fix\n  Fixed it.\n", "")
	cli(t, env, "memory", "search", "alice", "what's my cat called").want(t, 0, "facts/pets.md:5\n  - cat: Tom\n", "")
	cli(t, env, "memory", "search", "#slack-T1-C1", "release").want(t, 0, "facts/decisions.md:3\n  - Release: ship on Friday", "")
	cli(t, env, "memory", "search", "alice", "kubernetes").want(t, 0, `No entries match "kubernetes".`, "")

	// Flags before or after the words; --json is the whole entry.
	for _, args := range [][]string{
		{"memory", "search", "--json", "--limit", "1", "alice", "logger"},
		{"memory", "search", "alice", "logger", "--json", "--limit=1"},
	} {
		r := cli(t, env, args...)
		var hits []map[string]any
		if err := json.Unmarshal([]byte(r.stdout), &hits); err != nil || r.code != 0 {
			t.Fatalf("%q: exit %d, %v:\n%s%s", args, r.code, err, r.stdout, r.stderr)
		}
		if len(hits) != 1 || hits[0]["path"] != "episodes/2026-01.md" || hits[0]["heading"] != "Logger fix" || hits[0]["line"] != 5.0 ||
			hits[0]["date"] != "2026-01-05" || hits[0]["text"] != "## Logger fix\n- Summary: logger fix\n- Date: 2026-01-05\n\nFixed it." || hits[0]["score"].(float64) <= 0 {
			t.Errorf("%q: %v", args, hits)
		}
		if len(hits[0]) != 6 {
			t.Errorf("%q: fields %v, want path, heading, line, date, text, score", args, hits[0])
		}
	}
	cli(t, env, "memory", "search", "--json", "alice", "kubernetes").want(t, 0, "[]\n", "")

	// A huge query is cut, never a crash.
	cli(t, env, "memory", "search", "alice", strings.Repeat("logger ", 200000)).want(t, 0, "episodes/2026-01.md:5", "")

	// Mistakes: one line saying why; a usage mistake exits 2, no such
	// memory 1.
	for _, tc := range []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"memory", "search", "alice"}, 2, "memory search takes 2 or more arguments"},
		{[]string{"memory", "search", "alice", "  "}, 2, "memory search needs words to look for"},
		{[]string{"memory", "search", "--limit", "0", "alice", "x"}, 2, "--limit 0 is out of range; give 1 to 20"},
		{[]string{"memory", "search", "--limit", "21", "alice", "x"}, 2, "--limit 21 is out of range"},
		{[]string{"memory", "search", "carol", "x"}, 1, `no memory for user "carol"`},
		{[]string{"memory", "search", "../alice", "x"}, 2, ""},
	} {
		r := cli(t, env, tc.args...)
		r.want(t, tc.code, "", tc.stderr)
		if strings.Count(strings.TrimSpace(r.stderr), "\n") > 0 {
			t.Errorf("%q: more than one line:\n%s", tc.args, r.stderr)
		}
	}
}

// The admin command takes no lock: it answers beside a running chat or
// server (which holds it), and gives the answer the running process's
// store gives.
func TestMemorySearchBesideAnOwner(t *testing.T) {
	data, env := memoryFixture(t)
	cfg, err := config.Load("", false, func(k string) string { return env[k] }, registry.Platforms()...)
	if err != nil {
		t.Fatal(err)
	}
	l, err := lockData(nil, cfg, "mnemo serve")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	r := cli(t, env, "memory", "search", "--json", "alice", "cat", "logger")
	var got []memory.Hit
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || r.code != 0 {
		t.Fatalf("exit %d, %v:\n%s%s", r.code, err, r.stdout, r.stderr)
	}
	running, err := memory.Open(memory.Options{Dir: data, Watch: true})
	if err != nil {
		t.Fatal(err)
	}
	defer running.Close()
	want, err := running.Search("alice", "cat logger", memory.DefaultSearchLimit)
	if err != nil {
		t.Fatal(err)
	}
	wantJSON, _ := json.Marshal(want.Hits)
	gotJSON, _ := json.Marshal(got)
	if len(got) != 2 || string(gotJSON) != string(wantJSON) {
		t.Errorf("beside the owner the command found\n%+v\nthe owner's store\n%+v", got, want.Hits)
	}
}

// `mnemo memory why` prints the matching lines with their sources in
// full (an admin's view); a usage mistake exits 2.
func TestMemoryWhy(t *testing.T) {
	data, env := memoryFixture(t)
	putFile(t, filepath.Join(data, "alice", "facts", "home.md"),
		"# Home\n\n> Summary: home\n\n- Lives in: Berlin <!-- src: discord · dm · 2026-11-20 · https://discord.com/channels/@me/5/6 -->\n- Plant: fern\n")
	cli(t, env, "memory", "why", "alice", "where", "do", "I", "live").want(t, 0,
		"- `facts/home.md:5` - Lives in: Berlin\n  from: discord, dm, 2026-11-20, https://discord.com/channels/@me/5/6", "")
	cli(t, env, "memory", "why", "alice", "fern").want(t, 0, "from: added by hand (no source recorded)", "")
	cli(t, env, "memory", "why", "alice", " ").want(t, 2, "", "memory why needs words to look for")
	cli(t, env, "memory", "why", "alice").want(t, 2, "", "memory why takes 2 or more arguments")
	cli(t, env, "memory", "why", "carol", "x").want(t, 1, "", `no memory for user "carol"`)
}
