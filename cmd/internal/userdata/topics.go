package userdata

import (
	"path"
	"slices"
	"strings"

	"github.com/mnemo-agent/mnemo/memory"
)

// Topics is what a person's suggested prompts are drawn from (Slack's
// assistant threads): the titles of the newest entries of user's episodes,
// newest first, and the titles of their fact files other than
// facts/user.md (the person themself), at most n of each. user is a
// person, and only their own folder is read — all of it, private files
// too, as in a DM: a channel's memory is never a person's topic.
func (s *Service) Topics(user string, n int) (recent, facts []string, err error) {
	if err := memory.ValidateUser(user); err != nil {
		return nil, nil, err
	}
	files, err := s.files(user)
	if err != nil {
		return nil, nil, err
	}
	var entries []memory.Entry
	for _, f := range files {
		// A file deleted meanwhile has no text: no entries, its name.
		switch {
		case f.kind == memory.KindEpisode:
			entries = append(entries, memory.Entries(f.text)...)
		case f.kind == memory.KindFact && f.Path != "facts/user.md" && len(facts) < n: // a roll-up is neither
			facts = append(facts, factTitle(f.Path, f.text))
		}
	}
	// Newest first; within a day, the later entry of the file first.
	slices.Reverse(entries)
	slices.SortStableFunc(entries, func(x, y memory.Entry) int { return strings.Compare(y.Date, x.Date) })
	for _, e := range entries {
		if len(recent) == n {
			break
		}
		if t := strings.TrimSpace(e.Title); t != "" && !slices.Contains(recent, t) {
			recent = append(recent, t)
		}
	}
	return recent, facts, nil
}

// factTitle is a fact file's "# " title, or its name with its dashes and
// underscores as spaces when it has none.
func factTitle(p, text string) string {
	for line := range strings.Lines(text) {
		if t, ok := strings.CutPrefix(strings.TrimSpace(line), "# "); ok && strings.TrimSpace(t) != "" {
			return strings.TrimSpace(t)
		}
	}
	return strings.NewReplacer("-", " ", "_", " ").Replace(strings.TrimSuffix(path.Base(p), ".md"))
}
