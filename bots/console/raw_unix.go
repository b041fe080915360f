//go:build linux || darwin || dragonfly || freebsd || netbsd || openbsd

package console

import "golang.org/x/sys/unix"

// rawMode reads keys one at a time without echo or signals (Ctrl-C is a
// key the chat handles), as term.MakeRaw does, but keeps output
// processing on: a "\n" written by anyone (a reply, a warning on stderr)
// still starts its line at the left edge.
func rawMode(fd int) (restore func() error, err error) {
	old, err := unix.IoctlGetTermios(fd, ioctlGetTermios)
	if err != nil {
		return nil, err
	}
	raw := *old
	raw.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL | unix.IXON
	raw.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
	raw.Cflag &^= unix.CSIZE | unix.PARENB
	raw.Cflag |= unix.CS8
	raw.Cc[unix.VMIN] = 1
	raw.Cc[unix.VTIME] = 0
	if err := unix.IoctlSetTermios(fd, ioctlSetTermios, &raw); err != nil {
		return nil, err
	}
	return func() error { return unix.IoctlSetTermios(fd, ioctlSetTermios, old) }, nil
}
