package userdata

import (
	"errors"
	"fmt"
	"strings"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/memory"
	memhistory "github.com/mnemo-agent/mnemo/memory/history"
)

// WhyLimit is how many entries a why shows.
const WhyLimit = 8

// WhyScope is who asks "why" and where, which decides what is searched
// and how much of each source is shown.
type WhyScope struct {
	// Owner is the memory searched: a person, or (for an admin) a
	// channel's memory.
	Owner string
	// Channel is the memory name of the channel asked in (a person's
	// /memory why there): the search covers the person's shared files and
	// that channel's memory, and a source from anywhere but that channel
	// shows neither its place nor its link. "" with InChannel: a channel
	// whose memory is off.
	Channel   string
	InChannel bool
}

// NothingWhy answers a why that found nothing.
const NothingWhy = "Nothing I remember matches %s."

// Why answers /memory why and `mnemo memory why`: the lines of memory
// that match query (the search's hits, best first), each with where it
// came from (its provenance stamp, or "added by hand" without one) and
// its history: when it first appears in the kept versions of its file,
// and by whom (the reflector, a hand edit, a restore). In a channel only
// what the channel may see is searched, and a source outside the channel
// is named without its place or link: a DM's link or a private channel's
// name never shows in a channel.
func (s *Service) Why(w WhyScope, query string) (string, error) {
	if strings.TrimSpace(query) == "" {
		return "", errors.New("say what to look for, e.g. /memory why Berlin")
	}
	u, err := s.store.User(w.Owner) // checks the name
	if err != nil {
		return "", err
	}
	var space memory.Space = u.NewSession()
	var ch *memory.User
	if w.InChannel {
		if ch, err = s.channelOf(w.Channel); err != nil {
			return "", err
		}
		space = memory.NewView(u, true, ch)
	}
	found, err := space.Search(query, WhyLimit)
	if err != nil {
		return "", err
	}
	if len(found.Hits) == 0 {
		return fmt.Sprintf(NothingWhy, "“"+oneLine(query)+"”"), nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "What I remember that matches “%s”, and where it came from:\n", oneLine(query))
	for _, h := range found.Hits {
		owner, rel := w.Owner, h.Path
		if r, ok := strings.CutPrefix(h.Path, memory.ChannelDir); ok && ch != nil {
			owner, rel = w.Channel, r
		}
		d, err := space.Load(h.Path)
		if err != nil {
			continue // gone since the search
		}
		raw := strings.Split(d.Text, "\n")
		for _, ln := range whyLines(raw, h) {
			fmt.Fprintf(&b, "\n- `%s:%d` %s\n  from: %s\n", h.Path, ln.n, ln.plain, w.source(ln.stamp))
			if hist := s.lineHistory(owner, rel, ln.plain); hist != "" {
				b.WriteString("  history: " + hist + "\n")
			}
		}
	}
	if more := found.Total - len(found.Hits); more > 0 {
		fmt.Fprintf(&b, "\n(%d more entries match; say more words to narrow it.)\n", more)
	}
	return strings.TrimRight(b.String(), "\n"), nil
}

// channelOf is the memory of the channel named key; nil for "".
func (s *Service) channelOf(key string) (*memory.User, error) {
	if key == "" {
		return nil, nil
	}
	if err := mnemo.ValidateChannel(key); err != nil {
		return nil, err
	}
	return s.store.User(key)
}

// whyLine is one line a hit names: its number, text and stamp.
type whyLine struct {
	n            int
	plain, stamp string
}

// whyLines are the lines of raw (a file's text with its stamps) that hit
// h names: an entry's heading, or a fact file's matching lines. A line
// gone since the search (an edit in between) is left out.
func whyLines(raw []string, h memory.Hit) []whyLine {
	var out []whyLine
	from := 0 // the hit's lines come in file order
	if h.Heading != "" {
		from = min(max(h.Line-1, 0), len(raw))
	}
	for _, want := range strings.Split(h.Text, "\n") {
		want = strings.TrimSpace(want)
		for n := from; n < len(raw); n++ {
			if p, st := memory.SplitStamp(raw[n]); strings.TrimSpace(p) == want {
				out = append(out, whyLine{n: n + 1, plain: want, stamp: st})
				from = n + 1
				break
			}
		}
		if h.Heading != "" {
			break // an entry: its heading, the hit's first line
		}
	}
	return out
}

// source words a stamp for the asker: in a channel, a place other than
// the channel is only "a private conversation" or "another channel".
func (w WhyScope) source(stamp string) string {
	st, ok := memory.ParseStamp(stamp)
	if !ok {
		return "added by hand (no source recorded)"
	}
	if w.InChannel && !w.here(st.Place) {
		switch {
		case st.Place == "dm" || st.Place == "group dm" || st.Place == "" && st.Surface == "terminal":
			st.Place = "a private conversation"
		default:
			st.Place = "another channel"
		}
		st.Link, st.By = "", ""
	}
	var f []string
	for _, v := range []string{st.Surface, st.Place, st.Date} {
		if v != "" {
			f = append(f, v)
		}
	}
	if st.By != "" {
		f = append(f, "said by "+st.By)
	}
	if st.Link != "" {
		f = append(f, st.Link)
	}
	return strings.Join(f, ", ")
}

// here says whether place ("#C03GHI", "#C03GHI thread") is the channel
// asked in: its memory name ends with that channel's id.
func (w WhyScope) here(place string) bool {
	id, ok := strings.CutPrefix(strings.TrimSuffix(place, " thread"), "#")
	return ok && id != "" && w.Channel != "" && strings.HasSuffix(w.Channel, "-"+id)
}

// lineHistory says when line first appears in the kept versions of
// owner's file rel and by whom, and the file's last change: "" without a
// history.
func (s *Service) lineHistory(owner, rel, line string) string {
	if s.hist == nil {
		return ""
	}
	versions, err := s.hist.List(owner, rel)
	if err != nil || len(versions) == 0 {
		return ""
	}
	// A replaced fact counts from when it was current.
	if i := strings.LastIndex(line, " (until "); i > 0 && strings.HasSuffix(line, ")") {
		line = line[:i]
	}
	var first *memhistory.Version
	for i := len(versions) - 1; i >= 0; i-- { // oldest first
		v := versions[i]
		if v.Deleted {
			first = nil // deleted then made again: count from then
			continue
		}
		text, err := s.hist.Read(owner, rel, v)
		if err != nil {
			continue
		}
		has := strings.Contains(memory.StripStamps(string(text)), line)
		switch {
		case has && first == nil:
			first = &versions[i]
		case !has:
			first = nil
		}
	}
	last := versions[0]
	out := ""
	if first != nil {
		out = fmt.Sprintf("in the file since %s (%s); ", first.Time.UTC().Format("2006-01-02 15:04"), first.Who)
	}
	return out + fmt.Sprintf("file last changed %s (%s), %d version(s) kept — `mnemo memory history` lists them",
		last.Time.UTC().Format("2006-01-02 15:04"), last.Who, len(versions))
}

// oneLine is s on one line, at most 100 runes.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 100 {
		s = string(r[:100]) + "…"
	}
	return s
}
