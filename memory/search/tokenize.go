package search

import (
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/blevesearch/snowballstem"
	"github.com/blevesearch/snowballstem/english"
)

// The words of a memory and of a query become terms one way: lower case;
// a plain word by its Snowball stem (fixed, fixes, fixing: fix); a name
// (a capitalised word inside a sentence), an acronym or a word with digits
// kept whole, so "Mark" is not "marking" and "v2" stays "v2"; a compound
// (go-openai, cache_key, v1.2, ci/cd) kept whole as well as by its parts.
// Stop words are not terms.

// word is one word (or compound) as written, with where it stands.
type word struct {
	text     string // as written
	parts    []string
	sentence bool // first word of a sentence or a line: its capital says nothing
}

// isJoiner reports whether b joins two word parts into one compound.
func isJoiner(r rune) bool {
	return r == '-' || r == '_' || r == '.' || r == '/' || r == '+' || r == '#' || r == '@'
}

func isWordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

// isApostrophe is ' or ’: a possessive or contraction follows.
func isApostrophe(r rune) bool { return r == '\'' || r == '’' }

// words splits s into its words, calling fn for each.
func words(s string, fn func(w word)) {
	sentence := true
	i := 0
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		if !isWordRune(r) {
			if r == '.' || r == '!' || r == '?' || r == ':' || r == ';' || r == '\n' || r == '(' || r == '"' || r == '“' {
				sentence = true
			}
			i += n
			continue
		}
		start := i
		var parts []string
		partStart := i
		for { // at the end of s, r is RuneError: no word rune, no joiner
			r, n := utf8.DecodeRuneInString(s[i:])
			if isWordRune(r) {
				i += n
				continue
			}
			// A joiner between two word runes keeps the compound going.
			if isJoiner(r) {
				if r2, _ := utf8.DecodeRuneInString(s[i+n:]); isWordRune(r2) {
					parts = append(parts, s[partStart:i])
					i += n
					partStart = i
					continue
				}
			}
			break
		}
		end := i
		parts = append(parts, s[partStart:end]) // never empty: a word rune follows every start
		// A possessive or contraction ('s, ’s, n't, 'll) belongs to the word: skip it.
		if r, n := utf8.DecodeRuneInString(s[i:]); isApostrophe(r) {
			tail := s[i+n:]
			k := strings.IndexFunc(tail, func(r rune) bool { return !unicode.IsLetter(r) })
			if k < 0 {
				k = len(tail)
			}
			if k <= 2 {
				i += n + k
			}
		}
		fn(word{text: s[start:end], parts: parts, sentence: sentence})
		sentence = false
	}
}

// kept reports whether a word is kept whole rather than stemmed: a name
// (capitalised inside a sentence), an acronym, or one with digits.
func kept(w string, sentence bool) bool {
	upper, lower, digit := 0, 0, 0
	for _, r := range w {
		switch {
		case unicode.IsUpper(r):
			upper++
		case unicode.IsDigit(r):
			digit++
		case unicode.IsLetter(r):
			lower++
			if r > 'z' {
				return true // Snowball's English rules are for a-z words
			}
		}
	}
	first, _ := utf8.DecodeRuneInString(w)
	switch {
	case digit > 0:
		return true
	case upper > 1 && lower == 0:
		return true // CI, API, SQL
	case unicode.IsUpper(first) && !sentence:
		return true // a name
	}
	return false
}

// stopWords are Snowball's English stop words, and the words people ask
// with.
var stopWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`a about above after again against all am an and any are as at be because been
		before being below between both but by can did do does doing don down during each few for from
		further had has have having he her here hers herself him himself his how i if in into is it its
		itself just me more most my myself no nor not now of off on once only or other our ours ourselves
		out over own s same she should so some such t than that the their theirs them themselves then
		there these they this those through to too under until up very was we were what when where which
		while who whom why will with you your yours yourself yourselves
		also us would could anything something ever tell remember recall know let please thing things got get one`) {
		m[w] = true
	}
	return m
}()

// stopWord reports whether w (lower case) is not searched for.
func stopWord(w string) bool { return stopWords[w] }

// whole marks a term kept whole (a name, an acronym, a word with digits):
// no word's stem starts with it, so the name Mark is never the stem of
// "marking", and a query word may ask for either.
const whole = "="

// term is the indexed form of one simple word, or "" when it is not indexed.
func term(w string, sentence bool, c *stemCache) string {
	lw := strings.ToLower(w)
	name := kept(w, sentence)
	if len(lw) < 2 && !unicode.IsDigit(rune(lw[0])) || stopWord(lw) && !name {
		return "" // a stop word, unless it is a name: Will, May, Bill
	}
	if name {
		return whole + lw
	}
	return c.stem(lw)
}

// stemCache remembers the stems of the words of one memory: Snowball's
// stemmer costs a microsecond or more a word, a person's words repeat,
// and the stems it returns are then one string each, not a copy per
// use. It is an Index's own (a forget clears it with the index), bounded:
// past maxStems words, new ones are stemmed every time. A nil cache
// stems every time (a query's few words).
type stemCache struct {
	mu sync.RWMutex
	m  map[string]string
}

const maxStems = 1 << 12

// stem is Snowball's English stem of the lower-case word w.
func (c *stemCache) stem(w string) string {
	if c != nil {
		c.mu.RLock()
		st, ok := c.m[w]
		c.mu.RUnlock()
		if ok {
			return st
		}
	}
	env := snowballstem.NewEnv(w)
	english.Stem(env)
	st := env.Current()
	if c != nil {
		c.mu.Lock()
		if c.m == nil {
			c.m = map[string]string{}
		}
		if len(c.m) < maxStems {
			st = strings.Clone(st) // the stemmer may return w itself, a piece of a text
			c.m[strings.Clone(w)] = st
		}
		c.mu.Unlock()
	}
	return st
}

// clear forgets every word.
func (c *stemCache) clear() {
	c.mu.Lock()
	c.m = nil
	c.mu.Unlock()
}

// docTerms calls fn with each term of a memory's line.
func docTerms(s string, c *stemCache, fn func(t string)) {
	words(s, func(w word) {
		if len(w.parts) > 1 {
			fn(strings.ToLower(w.text))
		}
		for _, p := range w.parts {
			sentence := w.sentence && len(w.parts) == 1
			t := term(p, sentence, c)
			if t != "" {
				fn(t)
			}
			// A capital at the start of a sentence may be a name's
			// ("Harbor: CI runners", "Will's first week"): the word is
			// kept whole too.
			if sentence && kept(p, false) {
				if n := term(p, false, c); n != t {
					fn(n)
				}
			}
		}
	})
}

// queryWord is one word of a query: the terms it matches (a name may have
// been written in lower case, a common word capitalised).
type queryWord struct {
	forms  []string
	weight []float64 // of each form
	// extra: a compound the query's words may make (go-openai whole,
	// on call as on-call), not a word of its own: it adds to a score,
	// and not to the count of the query's words a unit holds.
	extra bool
}

// queryForms are the terms one simple query word may have been indexed
// as: kept whole (a name, however the query writes it) and, unless it
// cannot be a plain English word, stemmed.
//
// A capitalised word is more likely the name: its stem counts half.
func queryForms(p string) ([]string, []float64) {
	lw := strings.ToLower(p)
	if len(lw) < 2 && !unicode.IsDigit(rune(lw[0])) {
		return nil, nil
	}
	if stopWord(lw) {
		if !kept(p, false) {
			return nil, nil
		}
		return []string{whole + lw}, []float64{1} // Will, May: only the name
	}
	forms, weights := []string{whole + lw}, []float64{1}
	if !kept(lw, true) {
		w := 1.0
		if kept(p, false) {
			w = 0.5
		}
		forms, weights = append(forms, (*stemCache)(nil).stem(lw)), append(weights, w)
	}
	return forms, weights
}
