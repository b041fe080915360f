package memory

import (
	"strings"
	"sync"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/agent/text"
	"github.com/mnemo-agent/mnemo/memory/search"
)

// Attribution. A reflection covers a batch of turns — in a channel
// possibly from several days and places — and each line it adds or
// changes is stamped with the turn that said it, chosen by code from the
// words, never by the model: the turn whose message shares the most of
// the line's words (as search reads them: stems, names, no stop words);
// between turns whose messages share as many, the one whose reply shares
// more (the assistant's words are a weaker sign: it may repeat what it
// recalled); between turns still tied, the newest. A line that shares no
// word with any turn is stamped with the batch's newest answered turn.

// Said is one turn of a reflection's batch: where it was said and its
// words, which decide the lines it is the source of.
type Said struct {
	Source Source
	Text   string // the person's message
	Reply  string // the assistant's reply: weighs only between messages that tie
	// Failed: the assistant could not answer. Its words still attribute
	// (the person said them there), but a line no turn's words match is
	// stamped with the newest turn that was answered, while there is one.
	Failed bool
}

// SaidOf is turn t as a reflection's batch holds it: where it was said
// (SourceOf) and its words (an explicit turn's are the message kept).
func SaidOf(t mnemo.Turn) Said {
	words := t.UserText
	if t.Explicit {
		for _, c := range t.Context {
			words += "\n" + c.Text
		}
	}
	return Said{Source: SourceOf(t), Text: words, Reply: t.ReplyText, Failed: t.Failed}
}

// Bounds of attribution: a batch is at most the reflector's MaxTurns
// turns; their texts and a line are read up to these many bytes, so
// stamping a reflection's writes costs a bounded time whatever was said.
const (
	maxSaidText = 16 << 10 // of a message, and of a reply
	maxLineText = 4 << 10  // of a line (an episode entry's whole text)
)

// attribution is how a session stamps what it writes: the batch's turns,
// oldest first, and the words of each, read once on first use.
type attribution struct {
	said     []Said
	fallback int // the newest answered turn, else the newest
	once     sync.Once
	words    search.Words
	text     map[string][]int // term → the turns whose message holds it
	reply    map[string][]int // term → the turns whose reply holds it
	stamps   []string         // each turn's stamp, rendered once
}

// newAttribution is the attribution of said (oldest first); nil for none.
func newAttribution(said []Said) *attribution {
	if len(said) == 0 {
		return nil
	}
	a := &attribution{said: append([]Said(nil), said...), fallback: len(said) - 1}
	for i := len(said) - 1; i >= 0; i-- {
		if !said[i].Failed {
			a.fallback = i
			break
		}
	}
	a.stamps = make([]string, len(said))
	for i, s := range a.said {
		a.stamps[i] = s.Source.stamp()
	}
	return a
}

// read indexes the turns' words: one lookup a word of a line.
func (a *attribution) read() {
	a.text, a.reply = map[string][]int{}, map[string][]int{}
	for i, s := range a.said {
		a.index(a.text, s.Text, i)
		a.index(a.reply, s.Reply, i)
	}
}

// index adds turn i to the postings of each term of s.
func (a *attribution) index(post map[string][]int, s string, i int) {
	a.words.Terms(text.Cut(s, maxSaidText), func(t string) {
		if p := post[t]; len(p) == 0 || p[len(p)-1] != i {
			post[t] = append(p, i)
		}
	})
}

// pick is the index of the turn that said line (see Attribution).
func (a *attribution) pick(line string) int {
	if len(a.said) == 1 {
		return 0
	}
	a.once.Do(a.read)
	seen := map[string]bool{}
	hits := make([]int, len(a.said))
	echo := make([]int, len(a.said))
	a.words.Terms(text.Cut(line, maxLineText), func(t string) {
		if seen[t] {
			return
		}
		seen[t] = true
		for _, i := range a.text[t] {
			hits[i]++
		}
		for _, i := range a.reply[t] {
			echo[i]++
		}
	})
	best := -1
	for i := len(a.said) - 1; i >= 0; i-- { // the newest wins a tie
		if hits[i]+echo[i] == 0 {
			continue
		}
		if best < 0 || hits[i] > hits[best] || hits[i] == hits[best] && echo[i] > echo[best] {
			best = i
		}
	}
	if best < 0 {
		return a.fallback
	}
	return best
}

// source is turn i's source.
func (a *attribution) source(i int) Source { return a.said[i].Source }

// stamp is turn i's stamp.
func (a *attribution) stamp(i int) string { return a.stamps[i] }

// entryText is the whole text of the episode entry whose heading is
// lines[i]: up to the next heading.
func entryText(lines []string, i int) string {
	end := i + 1
	for end < len(lines) && !strings.HasPrefix(lines[end], "## ") && !strings.HasPrefix(lines[end], "# ") {
		end++
	}
	return strings.Join(lines[i:end], "\n")
}
