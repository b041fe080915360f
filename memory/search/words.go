package search

import "strings"

// Words compares texts by their words, as search reads them (stems, names
// and compounds; no stop words), for a caller that asks which of a few
// texts a line came from (memory's provenance) rather than searching an
// index. A name's case says nothing there: "Berlin" and "berlin", "Ferns"
// and "fern" are one word. Its stems are cached (bounded, as an Index's);
// safe for concurrent use.
type Words struct {
	stems stemCache
}

// Terms calls fn with each term of s, a term as often as s holds it.
func (w *Words) Terms(s string, fn func(term string)) {
	docTerms(s, &w.stems, func(t string) {
		name, ok := strings.CutPrefix(t, whole)
		if !ok {
			fn(t)
			return
		}
		fn(name)
		if plainWord(name) {
			if st := w.stems.stem(name); st != name {
				fn(st)
			}
		}
	})
}

// plainWord says whether w is a lower-case a-z word Snowball's English
// rules are for.
func plainWord(w string) bool {
	for _, r := range w {
		if r < 'a' || r > 'z' {
			return false
		}
	}
	return w != ""
}
