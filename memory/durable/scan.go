package durable

import "bytes"

// Scan calls fn with each line of a journal's content data, in order and
// without its '\n'; blank lines are passed over. A line fn refuses (a
// record that does not parse) is skipped, and skip is told its number
// (from 1), whether it is the torn last line a crash leaves (no '\n'
// after it, so it was never acknowledged), and fn's error: the journal
// warns and goes on, so that one bad line never loses the rest.
func Scan(data []byte, fn func(line []byte) error, skip func(n int, torn bool, err error)) {
	for n := 1; len(data) > 0; n++ {
		line, rest, found := bytes.Cut(data, []byte{'\n'})
		data = rest
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if err := fn(line); err != nil {
			skip(n, !found, err)
		}
	}
}
