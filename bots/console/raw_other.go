//go:build !(linux || darwin || dragonfly || freebsd || netbsd || openbsd)

package console

import "golang.org/x/term"

// rawMode elsewhere is term.MakeRaw: output processing is off too, so a
// warning written meanwhile may not start at the left edge.
func rawMode(fd int) (restore func() error, err error) {
	old, err := term.MakeRaw(fd)
	if err != nil {
		return nil, err
	}
	return func() error { return term.Restore(fd, old) }, nil
}
