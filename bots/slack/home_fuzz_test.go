package slack

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	plat "github.com/mnemo-agent/mnemo/bots/platform"
)

// FuzzHomeView: whatever the memory holds and the person typed, the tab
// keeps to Block Kit's limits (blocks, section text, button values,
// action and block ids, unique block ids), escapes what Slack reads as
// markup, and names its owner.
func FuzzHomeView(f *testing.F) {
	f.Add("likes <!channel> & ramen", "- a\n- b", 3, 2, "ramen", "Done: `x`")
	f.Add(strings.Repeat("é", 4000), strings.Repeat("line\n", 400), 200, 50, strings.Repeat("q", 600), strings.Repeat("n", 5000))
	f.Add("", "", 0, 0, "", "")
	f.Fuzz(func(t *testing.T, summary, body string, nfiles, nentries int, query, notice string) {
		nfiles, nentries = min(max(nfiles, 0), 300), min(max(nentries, 0), 30)
		var h plat.Home
		for i := range nfiles {
			h.Files = append(h.Files, plat.HomeFile{Path: "facts/f.md", Summary: summary, Fact: i%3 != 0, Shared: i%2 == 0,
				Lines: strings.Split(body, "\n"), MoreLines: i})
		}
		for range nentries {
			h.Entries = append(h.Entries, plat.HomeEntry{Path: "episodes/2026-02.md", Date: "2026-02-14", Title: summary, Summary: body})
		}
		p := homePerson{key: "T1/U1", query: cutRunes(query, maxQueryRunes), notice: notice, confirm: "TOKEN", confirmText: notice}
		hits := []plat.HomeHit{{Path: "facts/f.md", Heading: summary, Text: body}, {Path: "facts/g.md", Text: summary}}
		v := homeView(p, homeContent{home: h, hits: hits})
		raw, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var view struct {
			Type     string `json:"type"`
			Metadata string `json:"private_metadata"`
			Blocks   []struct {
				BlockID string `json:"block_id"`
				Text    *struct {
					Text string `json:"text"`
				} `json:"text"`
				Elements []struct {
					ActionID string `json:"action_id"`
					Value    string `json:"value"`
					Text     any    `json:"text"`
				} `json:"elements"`
			} `json:"blocks"`
		}
		if err := json.Unmarshal(raw, &view); err != nil {
			t.Fatal(err)
		}
		if view.Type != "home" || view.Metadata != "T1/U1" || len(view.Blocks) > maxViewBlocks {
			t.Fatalf("type %q, metadata %q, %d blocks", view.Type, view.Metadata, len(view.Blocks))
		}
		ids := map[string]bool{}
		for _, b := range view.Blocks {
			if b.BlockID != "" && ids[b.BlockID] || len(b.BlockID) > 255 {
				t.Fatalf("block id %q", b.BlockID)
			}
			ids[b.BlockID] = true
			if b.Text != nil && utf8.RuneCountInString(b.Text.Text) > maxSectionText {
				t.Fatalf("a section of %d characters", utf8.RuneCountInString(b.Text.Text))
			}
			for _, e := range b.Elements {
				if len(e.ActionID) > 255 || utf8.RuneCountInString(e.Value) > maxButtonValue {
					t.Fatalf("element %q %q", e.ActionID, e.Value)
				}
			}
		}
		if strings.Contains(string(raw), "<!channel>") && !strings.Contains(notice, "<!channel>") {
			t.Fatalf("a ping from the memory reaches the view")
		}
	})
}
