package main

import (
	"slices"
	"strings"
	"testing"
)

// FuzzParseCommandLine: parsing any command line never panics, never
// invents an argument or a flag value, and keeps the order of the
// arguments it leaves.
func FuzzParseCommandLine(f *testing.F) {
	for _, s := range []string{"chat\x00--user\x00bob", "--config\x00x.yaml\x00memory\x00ls", "--config=x\x00--", "--listen",
		"-h\x00--log-format=json\x00serve", "--\x00--config\x00y", "memory\x00--config\x00x\x00forget\x00a\x00--yes", "memory\x00--yes\x00forget",
		"chat\x00-\x00--\x00-h", "version\x00--listen=:1", "bogus\x00--help"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, joined string) {
		args := strings.Split(joined, "\x00")
		g, name, run, pos, err := parseCommandLine(args, commandTable())
		if err != nil {
			if run != nil || pos != nil {
				t.Fatalf("parseCommandLine(%q) returned a runner or arguments with %v", args, err)
			}
			return
		}
		if name != "" && !slices.Contains(args, name) {
			t.Fatalf("parseCommandLine(%q) invented the command %q", args, name)
		}
		i := 0
		for _, p := range pos {
			for i < len(args) && args[i] != p {
				i++
			}
			if i == len(args) {
				t.Fatalf("parseCommandLine(%q) left %q, not in order from the input", args, pos)
			}
			i++
		}
		for _, p := range []*string{g.config, g.logFormat, g.listen} {
			if p != nil && !slices.ContainsFunc(args, func(a string) bool { return strings.HasSuffix(a, *p) }) {
				t.Fatalf("parseCommandLine(%q) invented the value %q", args, *p)
			}
		}
	})
}
