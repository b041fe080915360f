package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/mnemo-agent/mnemo/cmd/internal/wiring"
	"github.com/mnemo-agent/mnemo/memory"
)

// recentEpisodes is how many episode entries /memory shows in the chat.
const recentEpisodes = 8

// showInChat is /memory in the terminal chat: each fact file's text (its
// title and summary lines as a heading, with the file marked [private] or
// [shared]), then the newest episode entries with their dates — what is
// remembered, never the model's instructions.
func (a *app) showInChat(user string) (string, error) {
	u, files, err := wiring.Files(a.store, user)
	if err != nil {
		return "", err
	}
	if len(files) == 0 {
		return "I don't remember anything about you yet.", nil
	}
	var facts, episodes []string
	var entries []memory.Entry
	for _, f := range files {
		doc, err := u.Read(f.Path)
		if err != nil {
			continue // deleted meanwhile, or not readable: memory check says why
		}
		if k, _ := memory.ParsePath(f.Path); k == memory.KindFact {
			facts = append(facts, "### "+f.Summary+" ("+f.Path+") "+visibilityTag(f)+"\n"+factBody(doc.Text))
			continue
		}
		episodes = append(episodes, f.Path+" "+visibilityTag(f))
		entries = append(entries, memory.Entries(doc.Text)...)
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
		"/memory share FILE or /memory private FILE changes one; /forget deletes all of it.")
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

// forgetInChat is /forget yes in the terminal chat: everything about the
// user, as `mnemo memory forget USER --yes` does.
func (a *app) forgetInChat(user string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), forgetWait)
	defer cancel()
	d, err := a.forget(ctx, user, "", false)
	if errors.Is(err, memory.ErrNotFound) {
		return "There was nothing to forget: I don't remember anything about you.", nil
	}
	if err != nil {
		return "", err
	}
	msg := "Done: I have forgotten everything about you, " + user + "."
	if s := d.String(); s != "" {
		msg += " (Also " + s + ".)"
	}
	return msg, nil
}
