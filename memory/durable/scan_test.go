package durable

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
)

type skipped struct {
	n    int
	torn bool
}

func scanAll(data string) (lines []string, skips []skipped) {
	Scan([]byte(data), func(line []byte) error {
		if !bytes.HasPrefix(line, []byte("{")) || !bytes.HasSuffix(line, []byte("}")) {
			return errors.New("not a record")
		}
		lines = append(lines, string(line))
		return nil
	}, func(n int, torn bool, err error) {
		skips = append(skips, skipped{n, torn})
	})
	return lines, skips
}

// Scan passes every line on, passes blank lines over, and skips the lines
// that do not parse, telling the torn last line from a bad one.
func TestScan(t *testing.T) {
	lines, skips := scanAll("{a}\n\n  \nbad\n{b}\n{tor")
	if strings.Join(lines, " ") != "{a} {b}" {
		t.Errorf("lines %q", lines)
	}
	if fmt.Sprint(skips) != "[{4 false} {6 true}]" {
		t.Errorf("skips %v", skips)
	}
	lines, skips = scanAll("{a}\nbad\n")
	if len(lines) != 1 || fmt.Sprint(skips) != "[{2 false}]" {
		t.Errorf("a bad last line ending in a newline is not torn: %q %v", lines, skips)
	}
	if lines, skips := scanAll(""); lines != nil || skips != nil {
		t.Error("empty content")
	}
}

// FuzzScan: every non-blank line is either passed on or skipped, whole and
// without its newline, numbered in order; only the last can be torn.
func FuzzScan(f *testing.F) {
	f.Add([]byte("{\"op\":\"add\"}\n{\"op\":\"done\"}\n"))
	f.Add([]byte("{a}\n\nbad\n{tor"))
	f.Add([]byte("\n\n\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var got [][]byte
		last := 0
		Scan(data, func(line []byte) error {
			if bytes.IndexByte(line, '\n') >= 0 || len(bytes.TrimSpace(line)) == 0 {
				t.Fatalf("line %q", line)
			}
			got = append(got, line)
			if line[0] == '{' {
				return nil
			}
			return errors.New("bad")
		}, func(n int, torn bool, err error) {
			if n <= last || err == nil {
				t.Fatalf("skip %d after %d: %v", n, last, err)
			}
			last = n
			if torn && (n != bytes.Count(data, []byte{'\n'})+1 || bytes.HasSuffix(data, []byte{'\n'})) {
				t.Fatalf("line %d torn in %q", n, data)
			}
		})
		var want [][]byte
		for _, l := range bytes.Split(data, []byte{'\n'}) {
			if len(bytes.TrimSpace(l)) > 0 {
				want = append(want, l)
			}
		}
		if len(got) != len(want) {
			t.Fatalf("%d lines seen, %d in %q", len(got), len(want), data)
		}
		for i := range got {
			if !bytes.Equal(got[i], want[i]) {
				t.Fatalf("line %d: %q, want %q", i, got[i], want[i])
			}
		}
	})
}
