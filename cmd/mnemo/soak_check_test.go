package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/mnemo-agent/mnemo/memory"
)

// maxSoakProblems is how many problems of one kind are listed.
const maxSoakProblems = 15

// soakProblems collects what a check found, a few of each kind.
type soakProblems struct {
	kinds map[string][]string
	order []string
}

func (p *soakProblems) add(kind, format string, args ...any) {
	if p.kinds == nil {
		p.kinds = map[string][]string{}
	}
	if _, ok := p.kinds[kind]; !ok {
		p.order = append(p.order, kind)
	}
	p.kinds[kind] = append(p.kinds[kind], fmt.Sprintf(format, args...))
}

func (p *soakProblems) String() string {
	var b strings.Builder
	for _, k := range p.order {
		list := p.kinds[k]
		fmt.Fprintf(&b, "%s: %d\n", k, len(list))
		for i, s := range list {
			if i == maxSoakProblems {
				fmt.Fprintf(&b, "  … and %d more\n", len(list)-i)
				break
			}
			b.WriteString("  " + s + "\n")
		}
	}
	return b.String()
}

// check checks the run once serve has stopped: every message answered
// exactly once on its platform, every reflection's entry and fact line in
// the files exactly once, every turn reflected exactly once, every person's
// edit still there, and the figures.
func (s *soak) check() {
	var p soakProblems
	s.checkAnswers(&p)
	s.checkMemory(&p)
	f := &s.figures
	lines, warnings, errs, dups := s.logs.counts()
	f.Warnings, f.DupsIgnored = warnings, dups
	if errs > 0 {
		p.add("ERROR lines in serve's log", "%d of %d lines (the first warnings and errors are below)", errs, lines)
	}
	if f.Redeliveries+f.Duplicates > 0 && dups == 0 {
		p.add("deduplication", "%d redeliveries and duplicate dispatches, but no duplicate was ignored", f.Redeliveries+f.Duplicates)
	}
	// `mnemo memory check` on what the soak left: no torn entry, no temp
	// file, no file without a summary.
	var out, errOut bytes.Buffer
	if err := run(stopOn(context.Background()), []string{"memory", "check"}, func(k string) string { return s.env[k] },
		strings.NewReader(""), &out, &errOut); err != nil {
		p.add("mnemo memory check", "%v\n%s%s", err, out.String(), errOut.String())
	}
	if len(p.order) > 0 {
		s.t.Errorf("soak problems (seed %d):\n%s\nlog warnings and errors:\n%s", s.seed, p.String(), s.logs.kept())
	}
}

// checkAnswers: the Thinker answered every message once, and every message
// got exactly one reply post, on its platform, in its DM, with its answer.
func (s *soak) checkAnswers(p *soakProblems) {
	m := s.model
	m.mu.Lock()
	answered := m.answered
	for _, pr := range m.problems {
		p.add("model script", "%s", pr)
	}
	m.mu.Unlock()
	if n := m.unexpected.Load(); n > 0 {
		p.add("model script", "%d request(s) the script could not make sense of", n)
	}
	s.figures.ModelRequests = m.thinker.Load() + m.reflector.Load()
	slackCount, discordCount := map[string]int{}, map[string]int{}
	byToken := map[string]soakSent{}
	byMessageID := map[string]soakSent{}
	for _, r := range s.sent {
		byToken[r.token] = r
		if !r.slack {
			byMessageID[r.discord.ID] = r
		}
		if n := answered[r.token]; n != 1 {
			p.add("messages the Thinker did not answer exactly once", "%s: %d times", r.token, n)
		}
	}
	for token := range answered {
		if _, ok := byToken[token]; !ok {
			p.add("answers to messages never sent", "%s", token)
		}
	}
	for _, post := range s.slk.Replies() { // as they show now: a streamed reply is updated
		token := soakTokenRe.FindString(post.Text)
		r, ok := byToken[token]
		switch {
		case !ok || !r.slack:
			p.add("Slack posts that answer no Slack message", "%s in %s", clipText(post.Text), post.Channel)
		case post.Channel != soakSlackDM(r.user) || post.Text != soakAnswerHead+token+".":
			p.add("Slack replies in the wrong place or with the wrong text", "%q in %s for %s", clipText(post.Text), post.Channel, token)
		default:
			slackCount[token]++
		}
	}
	edited := map[string]string{} // a streamed reply is posted, then edited
	for _, e := range s.dsc.MessageEdits() {
		edited[e.MessageID] = e.Message.Content
	}
	for _, post := range s.dsc.Posts() {
		if c, ok := edited[post.Message.ID]; ok {
			post.Body.Content = c
		}
		ref := ""
		if post.Body.Reference != nil {
			ref = post.Body.Reference.MessageID
		}
		r, ok := byMessageID[ref]
		switch {
		case !ok:
			p.add("Discord posts that reply to no message sent", "%q in %s (reference %q)", clipText(post.Body.Content), post.ChannelID, ref)
		case post.ChannelID != soakDiscordDM(r.user) || post.Body.Content != soakAnswerHead+r.token+".":
			p.add("Discord replies in the wrong place or with the wrong text", "%q in %s for %s", clipText(post.Body.Content), post.ChannelID, r.token)
		default:
			discordCount[r.token]++
		}
	}
	for _, r := range s.sent {
		n, where := slackCount[r.token], "Slack"
		if !r.slack {
			n, where = discordCount[r.token], "Discord"
		}
		if n != 1 {
			p.add("messages not answered exactly once", "%s (%s): %d replies", r.token, where, n)
		}
	}

	auto := 0
	for _, e := range s.slk.Sent() {
		if e.RetryAttempt > 0 {
			auto++
		}
	}
	s.figures.AutoRedeliveries = max(auto-s.figures.Redeliveries, 0)
	s.figures.SlackConnections = s.slk.Connections()
	s.figures.DiscordConns = s.dsc.Connections()
	for _, r := range s.dsc.Resumes() {
		if r.Accepted {
			s.figures.DiscordResumes++
			s.figures.ResumeReplays += r.Replayed
		}
	}
}

func clipText(s string) string {
	if r := []rune(s); len(r) > 80 {
		return string(r[:80]) + "…"
	}
	return s
}

// checkMemory: what every reflection was told to write is in the files
// exactly once, every turn is in exactly one episode entry, and every
// person's edit is still in its file.
func (s *soak) checkMemory(p *soakProblems) {
	m := s.model
	m.mu.Lock()
	runs := append([]*soakRun(nil), m.order...)
	m.mu.Unlock()
	f := &s.figures
	f.Reflections = len(runs)
	f.ForcedEdits, f.Conflicts, f.PatchFallbacks, f.TornReads = m.forced.Load(), m.conflicts.Load(), m.patches.Load(), m.torn.Load()
	f.HumanRedone, f.VimYielded = s.human.redone.Load(), s.human.yielded.Load()

	facts := map[string]string{}    // user → facts/soak.md
	episodes := map[string]string{} // user → every episode file, joined
	read := func(user string) {
		if _, ok := facts[user]; ok {
			return
		}
		b, err := os.ReadFile(filepath.Join(s.memDir, user, "facts", "soak.md"))
		if err != nil {
			p.add("memory files", "%v", err)
		}
		// The reflector's lines carry where they were learned: the
		// checks below read the text.
		facts[user] = memory.StripStamps(string(b))
		names, _ := filepath.Glob(filepath.Join(s.memDir, user, "episodes", "*"))
		sort.Strings(names)
		var all strings.Builder
		for _, n := range names {
			b, err := os.ReadFile(n)
			if err != nil {
				p.add("memory files", "%v", err)
			}
			all.Write(b)
			all.WriteString("\n")
		}
		episodes[user] = memory.StripStamps(all.String())
	}
	for _, r := range runs {
		read(r.user)
		if strings.Contains(r.id, "#") {
			p.add("batches reflected more than once", "%s of %s", r.id, r.user)
		}
		if r.gaveUp != "" {
			p.add("reflections that could not write what they meant to", "%s of %s: %s", r.id, r.user, r.gaveUp)
		}
		if n := strings.Count(episodes[r.user], soakEntryHead+r.id+"\n"); n != 1 {
			p.add("reflection entries not in the episode files exactly once", "%s of %s: %d", r.id, r.user, n)
		}
		if n := strings.Count(facts[r.user], soakFactLine(r)+"\n"); n != 1 {
			p.add("reflection fact lines not in facts/soak.md exactly once", "%s of %s: %d", r.id, r.user, n)
		}
	}
	for u := range s.users {
		user := soakMemoryUser(u)
		read(user)
		seen := map[string]int{}
		for line := range strings.Lines(episodes[user]) {
			if rest, ok := strings.CutPrefix(line, soakTurnsHead); ok {
				for _, tok := range strings.Fields(rest) {
					seen[tok]++
				}
			}
		}
		for _, i := range s.perUser[u] {
			if tok := s.sent[i].token; seen[tok] != 1 {
				p.add("turns not reflected exactly once", "%s: in %d episode entries", tok, seen[tok])
			}
		}
	}

	edits, by := s.human.ledger()
	f.HumanEdits, f.EditsByStyle = len(edits), by
	for _, e := range edits {
		b, err := os.ReadFile(filepath.Join(s.memDir, e.user, filepath.FromSlash(e.path)))
		if err != nil {
			p.add("memory files", "%v", err)
			continue
		}
		if n := strings.Count(string(b), e.marker+"\n"); n != 1 {
			p.add("person's edits lost (or doubled)", "%s in %s/%s (forced: %v): %d times", e.marker, e.user, e.path, e.forced, n)
		}
	}
	if f.ForcedEdits == 0 || f.Conflicts < f.ForcedEdits {
		p.add("conflicts", "%d edits were saved between a reflection's read and its write, but only %d writes were refused as conflicts",
			f.ForcedEdits, f.Conflicts)
	}
}
