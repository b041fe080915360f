package userdata

import (
	"slices"
	"strings"

	"github.com/mnemo-agent/mnemo/bots/platform"
	"github.com/mnemo-agent/mnemo/memory"
)

// Bounds of what Home gives a home surface: a platform cuts further to
// its own limits and says so.
const (
	homeLines   = 5  // first lines of each fact file
	homeEntries = 10 // newest episode entries
)

// Home is what a person's home surface (Slack's App Home tab) shows of
// user: their own files, private and shared (a channel's memory never:
// user must be a person), each fact file's first lines without
// provenance stamps, and their newest episode entries.
func (s *Service) Home(user string) (platform.Home, error) {
	if err := memory.ValidateUser(user); err != nil {
		return platform.Home{}, err
	}
	files, err := s.files(user)
	if err != nil {
		return platform.Home{}, err
	}
	var h platform.Home
	var entries []platform.HomeEntry
	for _, f := range files {
		hf := platform.HomeFile{Path: f.Path, Summary: f.Summary, Size: f.Size, Shared: f.Shared, Fact: f.kind == memory.KindFact}
		switch {
		case !f.read: // deleted meanwhile, or not readable: listed all the same
		case hf.Fact:
			lines := strings.Split(factBody(f.text), "\n")
			if len(lines) == 1 && lines[0] == "" {
				lines = nil
			}
			hf.Lines, hf.MoreLines = lines[:min(len(lines), homeLines)], max(len(lines)-homeLines, 0)
		default:
			for _, e := range memory.Entries(f.text) {
				entries = append(entries, platform.HomeEntry{Path: f.Path, Date: e.Date, Title: e.Title, Summary: e.Summary})
			}
		}
		h.Files = append(h.Files, hf)
	}
	// Newest first; an entry without a date last, files in index order.
	slices.SortStableFunc(entries, func(x, y platform.HomeEntry) int { return strings.Compare(y.Date, x.Date) })
	h.Entries, h.MoreEntries = entries[:min(len(entries), homeEntries)], max(len(entries)-homeEntries, 0)
	return h, nil
}

// SearchHome is user's own memory searched as memory_search does in a
// private conversation (their private and shared files, never a
// channel's), best first, the texts without provenance stamps.
func (s *Service) SearchHome(user, query string, limit int) ([]platform.HomeHit, error) {
	if err := memory.ValidateUser(user); err != nil {
		return nil, err
	}
	found, err := s.store.Search(user, query, limit)
	if err != nil {
		return nil, err
	}
	hits := make([]platform.HomeHit, len(found.Hits))
	for i, h := range found.Hits {
		hits[i] = platform.HomeHit{Path: h.Path, Heading: h.Heading, Date: h.Date, Line: h.Line,
			Text: strings.TrimSpace(memory.StripStamps(h.Text))}
	}
	return hits, nil
}
