package search

import (
	"slices"
	"strings"
	"testing"
)

func TestWordsTerms(t *testing.T) {
	var w Words
	for _, tc := range []struct {
		text string
		want []string
	}{
		{"I live in Berlin", []string{"live", "berlin"}},
		{"- Lives in: berlin", []string{"live", "berlin"}},
		{"I grow Ferns", []string{"grow", "ferns", "fern"}},
		{"the CI of go-openai v2", []string{"ci", "go-openai", "go", "openai", "v2"}},
		{"Café", []string{"café"}},
		{"the and of", nil},
	} {
		var got []string
		w.Terms(tc.text, func(t string) {
			if !slices.Contains(got, t) {
				got = append(got, t)
			}
		})
		for _, want := range tc.want {
			if !slices.Contains(got, want) {
				t.Errorf("Terms(%q) = %q, lacks %q", tc.text, got, want)
			}
		}
		for _, g := range got {
			if strings.HasPrefix(g, whole) {
				t.Errorf("Terms(%q) gives a marked term %q", tc.text, g)
			}
		}
		if tc.want == nil && len(got) > 0 {
			t.Errorf("Terms(%q) = %q, want none", tc.text, got)
		}
	}
	if plainWord("") {
		t.Error("the empty word is plain")
	}
}
