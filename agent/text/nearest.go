package text

import (
	"slices"
	"strings"
)

// Nearest is the candidate that name most likely misspells (ignoring
// case): the only one it is a prefix of, else the closest by edits when
// fewer than half the longer word's letters differ.
func Nearest(name string, candidates []string) (string, bool) {
	lname := strings.ToLower(name)
	var prefixed []string
	for _, c := range candidates {
		if lname != "" && strings.HasPrefix(strings.ToLower(c), lname) {
			prefixed = append(prefixed, c)
		}
	}
	if len(prefixed) == 1 {
		return prefixed[0], true
	}
	best, dist := Closest(name, candidates)
	return best, best != "" && 2*dist < max(len(name), len(best))
}

// Closest is the candidate fewest edits from name, ignoring case (of those
// as close, the first in byte order), and its distance; "" when there are
// no candidates.
func Closest(name string, candidates []string) (best string, dist int) {
	lname := strings.ToLower(name)
	for i, c := range slices.Sorted(slices.Values(candidates)) {
		if d := editDistance(lname, strings.ToLower(c)); i == 0 || d < dist {
			best, dist = c, d
		}
	}
	return best, dist
}

// editDistance is the optimal string alignment distance (Levenshtein with
// transpositions).
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range rb {
		d[0][j+1] = j + 1
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}
