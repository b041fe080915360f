package slack

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	slackgo "github.com/slack-go/slack"

	"github.com/mnemo-agent/mnemo/bots/internal/memorycmd"
	plat "github.com/mnemo-agent/mnemo/bots/platform"
)

// Block Kit action ids of the App Home tab; all start with homePrefix.
const (
	homePrefix        = "mnemo_home_"
	actionHomeShare   = homePrefix + "share"   // value: the file's path
	actionHomePrivate = homePrefix + "private" // value: the file's path
	actionHomeForget  = homePrefix + "forget"  // value: the file's path, or "all"
	actionHomeConfirm = homePrefix + "forget_confirm"
	actionHomeCancel  = homePrefix + "forget_cancel"
	actionHomeSearch  = homePrefix + "search" // the search box (dispatch_action): value is what was typed
)

// Block Kit's limits on a view, and what the tab shows within them.
const (
	maxViewBlocks  = 100  // blocks in a view
	maxSectionText = 3000 // characters of a section's text
	maxButtonValue = 2000 // characters of a button's value
	homeHits       = 5    // search results shown
	homeLineRunes  = 300  // characters of a fact line or a summary shown
	homeHitRunes   = 400  // characters of a search result shown
	maxQueryRunes  = 500  // characters of a search kept
)

// Texts of the App Home tab (mrkdwn).
const (
	homeTitle = "What I remember about you"
	homeIntro = "Only you can see this tab. I use *private* files only when we talk in private (DMs, this app), " +
		"*shared* ones in channels too. Every file is private until you share it."
	homeFooter    = "The same in a DM or a channel: `/memory` (or `@mnemo memory` in a thread); `/memory help` says more."
	homeMore      = "_… %d more, use `/memory`_"
	homeSearchHit = "Search what I remember about you"
)

// mrkdwnEscaper escapes what Slack reads as markup in text of the
// person's memory (a <!channel> in a file must not ping anyone).
var mrkdwnEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// homeContent is what a person's tab shows of their memory, read for one
// publish: their files (or why not), and the search's results.
type homeContent struct {
	home      plat.Home
	homeErr   string // instead of the files: why there are none to show (mrkdwn)
	hits      []plat.HomeHit
	searchErr string // instead of the results (mrkdwn)
}

// homeView is p's Home tab: at most maxViewBlocks blocks, every section's
// text at most maxSectionText characters; what does not fit is said with
// a "… N more, use /memory" line. Its private_metadata names the owner
// (team/user), checked when a button is pressed.
func homeView(p homePerson, c homeContent) slackgo.HomeTabViewRequest {
	top := []slackgo.Block{
		slackgo.NewHeaderBlock(plain(homeTitle)),
		slackgo.NewContextBlock(homePrefix+"intro", mrkdwn(homeIntro)),
	}
	if p.notice != "" {
		top = append(top, section(homePrefix+"notice", toMrkdwn(p.notice)))
	}
	if p.confirm != "" {
		del := slackgo.NewButtonBlockElement(actionHomeConfirm, p.confirm, plain("Delete")).WithStyle(slackgo.StyleDanger)
		cancel := slackgo.NewButtonBlockElement(actionHomeCancel, p.confirm, plain("Cancel"))
		top = append(top, section(homePrefix+"confirm_text", toMrkdwn(p.confirmText)), slackgo.NewActionBlock(homePrefix+"confirm", del, cancel))
	}
	input := slackgo.NewPlainTextInputBlockElement(plain("words, a name, a month…"), actionHomeSearch).WithInitialValue(p.query)
	input.DispatchActionConfig = &slackgo.DispatchActionConfig{TriggerActionsOn: []string{"on_enter_pressed"}}
	top = append(top, slackgo.NewInputBlock(homePrefix+"search", plain(homeSearchHit), nil, input).WithDispatchAction(true))
	if p.query != "" {
		top = append(top, searchBlocks(p.query, c)...)
	}
	top = append(top, slackgo.NewDividerBlock())

	var bottom []slackgo.Block
	if c.homeErr == "" && len(c.home.Entries) > 0 {
		bottom = append(bottom, slackgo.NewDividerBlock(), section(homePrefix+"entries", entriesText(c.home)))
	}
	forgetAll := slackgo.NewButtonBlockElement(actionHomeForget, "all", plain("Forget everything")).WithStyle(slackgo.StyleDanger)
	bottom = append(bottom, slackgo.NewDividerBlock(), slackgo.NewContextBlock(homePrefix+"footer", mrkdwn(homeFooter)),
		slackgo.NewActionBlock(homePrefix+"forget_all", forgetAll))

	blocks := top
	switch {
	case c.homeErr != "":
		blocks = append(blocks, section(homePrefix+"files", c.homeErr))
	case len(c.home.Files) == 0:
		blocks = append(blocks, section(homePrefix+"files", toMrkdwn(memorycmd.NothingYetText)))
	default:
		blocks = append(blocks, fileBlocks(c.home.Files, maxViewBlocks-len(top)-len(bottom))...)
	}
	blocks = append(blocks, bottom...)
	return slackgo.HomeTabViewRequest{Type: slackgo.VTHomeTab, Blocks: slackgo.Blocks{BlockSet: blocks},
		PrivateMetadata: p.key, CallbackID: homePrefix + "tab"}
}

// fileBlocks are the files' blocks within budget blocks: a heading per
// kind, two blocks a file (its text, its buttons); the files left out are
// counted on a last line (kept room for).
func fileBlocks(files []plat.HomeFile, budget int) []slackgo.Block {
	var out []slackgo.Block
	kind := ""
	for i, f := range files {
		k := map[bool]string{true: "*Facts*", false: "*Episodes*"}[f.Fact]
		need := 2
		if k != kind {
			need++
		}
		if len(out)+need > budget-1 {
			out = append(out, slackgo.NewContextBlock(homePrefix+"files_more", mrkdwn(fmt.Sprintf(homeMore, len(files)-i))))
			break
		}
		if k != kind {
			kind = k
			out = append(out, section(homePrefix+"kind_"+strconv.Itoa(i), k))
		}
		toggle := slackgo.NewButtonBlockElement(actionHomeShare, f.Path, plain("Share"))
		if f.Shared {
			toggle = slackgo.NewButtonBlockElement(actionHomePrivate, f.Path, plain("Make private"))
		}
		forget := slackgo.NewButtonBlockElement(actionHomeForget, f.Path, plain("Forget")).WithStyle(slackgo.StyleDanger)
		id := strconv.Itoa(i)
		out = append(out, section(homePrefix+"file_"+id, fileText(f)), slackgo.NewActionBlock(homePrefix+"buttons_"+id, toggle, forget))
	}
	return out
}

// fileText is one file's section: its path, visibility and size, its
// summary and, for a fact file, its first lines.
func fileText(f plat.HomeFile) string {
	vis := "private"
	if f.Shared {
		vis = "shared"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "*`%s`* · %s · %s", f.Path, vis, humanSize(f.Size))
	if f.Summary != "" {
		b.WriteString("\n" + esc(cutRunes(f.Summary, homeLineRunes)))
	}
	for _, l := range f.Lines {
		b.WriteString("\n>" + esc(cutRunes(l, homeLineRunes)))
	}
	if f.MoreLines > 0 {
		fmt.Fprintf(&b, "\n_… %d more %s, use `/memory`_", f.MoreLines, plural(f.MoreLines, "line"))
	}
	return fitSection(b.String())
}

// entriesText is the newest episode entries, one a line, within a section.
func entriesText(h plat.Home) string {
	lines := []string{"*Newest entries*"}
	for _, e := range h.Entries {
		line := "• " + esc(cutRunes(e.Date+" "+e.Title, homeLineRunes))
		if e.Summary != "" {
			line += " — " + esc(cutRunes(e.Summary, homeLineRunes))
		}
		lines = append(lines, line+" (`"+e.Path+"`)")
	}
	return fitLines(lines, h.MoreEntries)
}

// searchBlocks are the results of the search in the tab.
func searchBlocks(query string, c homeContent) []slackgo.Block {
	head := "Results for *" + esc(query) + "*:"
	switch {
	case c.searchErr != "":
		return []slackgo.Block{section(homePrefix+"results", c.searchErr)}
	case len(c.hits) == 0:
		return []slackgo.Block{section(homePrefix+"results", "Nothing I remember about you matches *"+esc(query)+"*.")}
	}
	out := []slackgo.Block{section(homePrefix+"results", head)}
	for i, h := range c.hits[:min(len(c.hits), homeHits)] {
		where := fmt.Sprintf("*`%s:%d`*", h.Path, h.Line)
		for _, s := range []string{h.Heading, h.Date} {
			if s != "" {
				where += " · " + esc(cutRunes(s, homeLineRunes))
			}
		}
		text := where
		for _, l := range strings.Split(cutRunes(h.Text, homeHitRunes), "\n") {
			text += "\n>" + esc(l)
		}
		out = append(out, section(homePrefix+"hit_"+strconv.Itoa(i), fitSection(text)))
	}
	if len(c.hits) > homeHits {
		out = append(out, slackgo.NewContextBlock(homePrefix+"hits_more",
			mrkdwn("_More entries match: use more words, or `/memory why "+esc(cutRunes(query, 100))+"` for all of them._")))
	}
	return out
}

func plain(s string) *slackgo.TextBlockObject {
	return slackgo.NewTextBlockObject(slackgo.PlainTextType, s, false, false)
}

func mrkdwn(s string) *slackgo.TextBlockObject {
	return slackgo.NewTextBlockObject(slackgo.MarkdownType, s, false, false)
}

func section(id, text string) *slackgo.SectionBlock {
	return slackgo.NewSectionBlock(mrkdwn(fitSection(text)), nil, nil, slackgo.SectionBlockOptionBlockID(id))
}

func esc(s string) string { return mrkdwnEscaper.Replace(s) }

// fitSection cuts text to a section's limit, at a line break, saying so.
func fitSection(text string) string {
	if utf8.RuneCountInString(text) <= maxSectionText {
		return text
	}
	return fitLines(strings.Split(text, "\n"), 0)
}

// fitLines joins lines within a section's limit; the lines left out (and
// more besides) are counted on a last "… N more, use /memory" line. A line
// too long for a section alone is cut.
func fitLines(lines []string, more int) string {
	note := func(n int) string { return fmt.Sprintf(homeMore, n) }
	var b strings.Builder
	size := 0
	for i, l := range lines {
		n := utf8.RuneCountInString(l) + 1
		if size+n+utf8.RuneCountInString(note(len(lines)-i+more)) > maxSectionText {
			if i == 0 {
				l = cutRunes(l, maxSectionText/2)
				b.WriteString(l + "\n")
				i++
			}
			b.WriteString(note(len(lines) - i + more))
			return b.String()
		}
		b.WriteString(l + "\n")
		size += n
	}
	if more > 0 {
		b.WriteString(note(more))
	}
	return strings.TrimRight(b.String(), "\n")
}

// cutRunes keeps at most n characters of s, marking a cut with "…".
func cutRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

func plural(n int, unit string) string {
	if n == 1 {
		return unit
	}
	return unit + "s"
}

// humanSize writes a file size as the index does: 320 B, 1.2 KB.
func humanSize(n int64) string {
	switch {
	case n < 1024:
		return fmt.Sprintf("%d B", n)
	case n < 1024*1024:
		return fmt.Sprintf("%.1f KB", float64(n)/1024)
	}
	return fmt.Sprintf("%.1f MB", float64(n)/(1024*1024))
}
