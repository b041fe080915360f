package userdata

import (
	"fmt"
	"slices"
	"strings"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/memory"
)

// Texts of what is shown when nothing is remembered.
const (
	// NothingYet answers /memory for a person with no memory files.
	NothingYet = "I don't remember anything about you yet."
	// NothingOfChannel follows it in a channel with no memory files.
	NothingOfChannel = "I don't remember anything about this channel yet."
)

// recentEpisodes is how many episode entries ShowChat shows.
const recentEpisodes = 8

// Show is what `/memory` answers in Slack and Discord: each of the user's
// files marked private or shared, fact files in full, the index of their
// episodes; in a channel (channel is its memory name, mnemo.ChannelKey),
// what is remembered about the channel after them (all of it is used in
// the channel: no marks). user is a person: a channel's memory is never
// shown as someone's own.
func (s *Service) Show(user, channel string) (string, error) {
	if err := memory.ValidateUser(user); err != nil {
		return "", err
	}
	var b strings.Builder
	n, err := s.showFiles(&b, user, true, "What I remember about you (%d %s; I use [private] ones only when we talk in private, [shared] ones in channels too):\n")
	switch {
	case err != nil:
		return "", err
	case n == 0:
		b.WriteString(NothingYet + "\n")
	default:
		b.WriteString("\nTo let me use one of your files in channels: /memory share <path>; to keep it private again: /memory private <path>. " +
			"To delete a file: /memory forget <path>. To delete everything: /memory forget all.\n")
	}
	if channel != "" {
		if err := mnemo.ValidateChannel(channel); err != nil {
			return "", err
		}
		b.WriteString("\n")
		m, err := s.showFiles(&b, channel, false, "What I remember about this channel (%d %s, used with everyone who talks to me here):\n")
		if err != nil {
			return "", err
		}
		if m == 0 {
			b.WriteString(NothingOfChannel + "\n")
		}
	}
	return strings.TrimRight(b.String(), "\n"), nil
}

// shown is one memory file as /memory shows it: its index entry, and
// its text when it reads.
type shown struct {
	memory.FileInfo
	kind memory.Kind
	text string
	read bool // false: not readable (deleted meanwhile: memory check says why)
}

// files reads owner's memory files for showing, in the index's order,
// their texts without stamps.
func (s *Service) files(owner string) ([]shown, error) {
	u, err := s.store.User(owner)
	if err != nil {
		return nil, err
	}
	infos, err := u.List()
	if err != nil || len(infos) == 0 {
		return nil, err
	}
	out := make([]shown, len(infos))
	for i, f := range infos {
		out[i].FileInfo = f
		out[i].kind, _ = memory.ParsePath(f.Path)
		if d, err := u.Read(f.Path); err == nil {
			// Without provenance stamps: /memory shows what is remembered
			// (in a channel too, where a DM's link must not show);
			// /memory why says where each line came from.
			out[i].text, out[i].read = memory.StripStamps(d.Text), true
		}
	}
	return out, nil
}

// showFiles writes owner's files to b under the heading (a format taking
// the count and "file" or "files"), each an index line (marked [private]
// or [shared] when tag) with a fact file's text below it; nothing when
// there are none. It returns how many there are.
func (s *Service) showFiles(b *strings.Builder, owner string, tag bool, heading string) (int, error) {
	files, err := s.files(owner)
	if err != nil || len(files) == 0 {
		return 0, err
	}
	fmt.Fprintf(b, heading, len(files), map[bool]string{true: "file", false: "files"}[len(files) == 1])
	for _, f := range files {
		line := memory.IndexLine(f.FileInfo)
		if tag {
			line = "- " + VisibilityTag(f.FileInfo) + " " + strings.TrimPrefix(line, "- ")
		}
		b.WriteString("\n" + line + "\n")
		if f.kind == memory.KindFact && f.read {
			b.WriteString("```\n" + strings.TrimRight(f.text, "\n") + "\n```\n")
		}
	}
	return len(files), nil
}

// Read is the whole text of owner's memory file p (`mnemo memory show`);
// a missing file is an error wrapping memory.ErrNotFound.
func (s *Service) Read(owner, p string) (string, error) {
	u, err := s.store.User(owner)
	if err != nil {
		return "", err
	}
	d, err := u.Read(p)
	return d.Text, err
}

// VisibilityTag is how /memory marks a file: [shared] when its header
// says so (memory.IsShared, read with the index), else [private].
func VisibilityTag(f memory.FileInfo) string {
	if f.Shared {
		return "[shared]"
	}
	return "[private]"
}

// ShowChat is /memory in the terminal chat: each fact file's text (its
// title and summary lines as a heading, with the file marked [private] or
// [shared]), then the newest episode entries with their dates — what is
// remembered, never the model's instructions.
func (s *Service) ShowChat(user string) (string, error) {
	files, err := s.files(user)
	if err != nil {
		return "", err
	}
	if len(files) == 0 {
		return NothingYet, nil
	}
	var facts, episodes []string
	var entries []memory.Entry
	for _, f := range files {
		if !f.read {
			continue // deleted meanwhile, or not readable: memory check says why
		}
		if f.kind == memory.KindFact {
			facts = append(facts, "### "+f.Summary+" ("+f.Path+") "+VisibilityTag(f.FileInfo)+"\n"+factBody(f.text))
			continue
		}
		episodes = append(episodes, f.Path+" "+VisibilityTag(f.FileInfo))
		entries = append(entries, memory.Entries(f.text)...)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "## What I remember about you, %s\n", user)
	if len(facts) > 0 {
		b.WriteString("\n" + strings.Join(facts, "\n\n") + "\n")
	}
	if len(entries) > 0 {
		slices.SortStableFunc(entries, func(x, y memory.Entry) int { return strings.Compare(y.Date, x.Date) })
		fmt.Fprintf(&b, "\n### Recent work together (%d of %d, from %s)\n", min(len(entries), recentEpisodes), len(entries), strings.Join(episodes, ", "))
		for _, e := range entries[:min(len(entries), recentEpisodes)] {
			line := "- " + e.Date + " " + e.Title
			if e.Summary != "" {
				line += " — " + e.Summary
			}
			b.WriteString(line + "\n")
		}
	}
	b.WriteString("\nI use [private] files only when we talk in private (here, and in DMs), [shared] ones in Slack and Discord channels too. " +
		"/memory share FILE or /memory private FILE changes one; /memory forget FILE deletes one, /memory forget all all of it.")
	return b.String(), nil
}

// factBody is a fact file's text without its title, summary and
// visibility lines (shown in the heading above it).
func factBody(text string) string {
	var keep []string
	for _, line := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		t := strings.ToLower(strings.TrimSpace(line))
		quoted, ok := strings.CutPrefix(t, ">")
		quoted = strings.TrimSpace(quoted)
		if strings.HasPrefix(t, "# ") || ok && (strings.HasPrefix(quoted, "summary:") || strings.HasPrefix(quoted, "visibility:")) {
			continue
		}
		keep = append(keep, line)
	}
	return strings.TrimSpace(strings.Join(keep, "\n"))
}
