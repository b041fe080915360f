package main

import (
	"slices"
	"strings"
	"testing"
)

// FuzzSplitGlobal: the global-flag pre-pass never panics, never invents
// or loses an argument, and keeps the order of what it leaves.
func FuzzSplitGlobal(f *testing.F) {
	for _, s := range []string{"chat\x00--user\x00bob", "--config\x00x.yaml\x00memory\x00ls", "--config=x\x00--", "--listen", "-h\x00--log-format=json\x00serve", "--\x00--config\x00y"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, joined string) {
		args := strings.Split(joined, "\x00")
		g, rest, err := splitGlobal(args)
		if err != nil {
			return
		}
		// Everything left is an argument given, in the original order.
		i := 0
		for _, r := range rest {
			for i < len(args) && args[i] != r {
				i++
			}
			if i == len(args) {
				t.Fatalf("splitGlobal(%q) left %q, not in order from the input", args, rest)
			}
			i++
		}
		taken := 0
		for _, p := range []*string{g.config, g.logFormat, g.listen} {
			if p != nil {
				taken++
				if !slices.ContainsFunc(args, func(a string) bool { return strings.HasSuffix(a, *p) }) {
					t.Fatalf("splitGlobal(%q) invented the value %q", args, *p)
				}
			}
		}
		if len(rest)+taken > len(args) {
			t.Fatalf("splitGlobal(%q) returned more than it was given", args)
		}
	})
}
