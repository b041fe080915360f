package search

// tf is the weighted frequency of term t in u (0: not in it).
func (u *parsedUnit) tf(t string) int {
	for _, x := range u.terms {
		if x.term == t {
			return x.tf
		}
	}
	return 0
}
