package text

import (
	"regexp"
	"sync"
)

// Regexp is a regular expression compiled the first time it is used, so
// a start does not pay for the expressions of paths it never takes (a
// config error, a Slack message): compiling them all at init was a tenth
// of the CPU of a one-message `mnemo chat`.
type Regexp struct {
	once sync.Once
	expr string
	re   *regexp.Regexp
}

// NewRegexp is expr, compiled at its first Get; a bad expr panics there,
// as regexp.MustCompile does (every one is a constant a test runs).
func NewRegexp(expr string) *Regexp { return &Regexp{expr: expr} }

// Get is the compiled expression.
func (r *Regexp) Get() *regexp.Regexp {
	r.once.Do(func() { r.re = regexp.MustCompile(r.expr) })
	return r.re
}
