package memory

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// A file a Windows editor saved starts with a byte order mark, which
// IsShared reads past: SetVisibility must read the same header, or the
// line under the mark is neither dropped nor outvoted. Before the fix,
// SetVisibility(t, false) left such a file shared (so "private FILE" and a
// DM's write left it shared) and SetVisibility(t, true) left it private.
func TestSetVisibilityReadsTheHeaderUnderABOM(t *testing.T) {
	const bom = "\ufeff"
	for _, c := range []struct {
		text   string
		shared bool
		want   string
	}{
		{bom + "> Visibility: shared\n# T\n> Summary: s\n", false, bom + "# T\n> Summary: s\n> Visibility: private\n"},
		{bom + "> Visibility: private\n# T\n> Summary: s\n", true, bom + "# T\n> Summary: s\n> Visibility: shared\n"},
		{bom + "> Visibility: shared\n", false, bom + "> Visibility: private\n"},
		{bom + "# T\n- x\n", true, bom + "# T\n> Visibility: shared\n- x\n"},
		{bom + "- x\n", true, bom + "> Visibility: shared\n- x\n"},
		{bom + "- x\n", false, bom + "- x\n"},
	} {
		got := SetVisibility(c.text, c.shared)
		if got != c.want || IsShared(got) != c.shared {
			t.Errorf("SetVisibility(%q, %v) = %q (IsShared %v); want %q", c.text, c.shared, got, IsShared(got), c.want)
		}
	}
}

// The owner's "private FILE" on such a file makes it private.
func TestSetSharedPrivateUnderABOM(t *testing.T) {
	s := newStore(t)
	u := mustUser(t, s, "alice")
	file := filepath.Join(s.Dir(), "alice/facts/work.md")
	writeFile(t, file, "\ufeff> Visibility: shared\n# Work\n\n> Summary: work\n")
	if _, err := u.SetShared("facts/work.md", false, nil); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, file); IsShared(got) {
		t.Errorf("after SetShared(false) the file is still shared:\n%q", got)
	}
}

// A DM's patch cannot make such a file shared: what is said in a private
// conversation stays in private files.
func TestPrivateViewPatchUnderABOMStaysPrivate(t *testing.T) {
	s := newStore(t)
	u := mustUser(t, s, "alice")
	file := filepath.Join(s.Dir(), "alice/facts/notes.md")
	writeFile(t, file, "\ufeff> Visibility: private\n# Notes\n\n> Summary: notes\n\n- x\n")
	v := NewView(u, false, nil)
	if _, err := v.Load("facts/notes.md"); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Patch("facts/notes.md", []Patch{{OldText: "private", NewText: "shared"}}); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, file); IsShared(got) {
		t.Errorf("a private conversation's patch made the file shared:\n%q", got)
	}
}

// upTo is a header of n bytes: a title and one long quote line, each
// ending in a newline.
func upTo(n int) string {
	return "# T\n>" + strings.Repeat("x", n-len("# T\n>")-1) + "\n"
}

func TestIsShared(t *testing.T) {
	pad := strings.Repeat("- filler line of the header\n", summaryHead/28+1) // past summaryHead
	for _, c := range []struct {
		name, text string
		want       bool
	}{
		{"no line", "# T\n\n> Summary: s\n\n- x\n", false},
		{"shared", "# T\n\n> Summary: s\n> Visibility: shared\n", true},
		{"private", "# T\n> Visibility: private\n", false},
		{"empty", "", false},
		{"line alone, no newline", "> Visibility: shared", true},
		{"upper case", "# T\n> VISIBILITY: SHARED\n", false},
		{"lower case", "# T\n> visibility: shared\n", false},
		{"mixed case value", "# T\n> Visibility: Shared\n", false},
		{"no space after >", "# T\n>Visibility: shared\n", false},
		{"no space after colon", "# T\n> Visibility:shared\n", false},
		{"indented, spaces and tabs", "# T\n  \t>   Visibility:   shared \t\n", false},
		{"indented by a space", "# T\n > Visibility: shared\n", false},
		{"indented by a tab", "# T\n\t> Visibility: shared\n", false},
		{"trailing spaces and tabs", "# T\n> Visibility: shared \t\n", true},
		{"more spaces inside", "# T\n>  Visibility: shared\n", false},
		{"sharedNOT", "# T\n> Visibility: sharedNOT\n", false},
		{"CRLF", "# T\r\n> Summary: s\r\n> Visibility: shared\r\n", true},
		{"space before the colon", "# T\n> Visibility : shared\n", false},
		{"no colon", "# T\n> Visibility shared\n", false},
		{"no >", "# T\nVisibility: shared\n", false},
		{"list item", "# T\n- Visibility: shared\n", false},
		{"two >", "# T\n>> Visibility: shared\n", false},
		{"other value", "# T\n> Visibility: public\n", false},
		{"value with more words", "# T\n> Visibility: shared with everyone\n", false},
		{"empty value", "# T\n> Visibility:\n", false},
		{"shared then an empty value", "# T\n> Visibility: shared\n> Visibility:\n", false},
		{"an empty value then shared", "# T\n>Visibility:\n> Visibility: shared\n", false},
		{"short line", "# T\n> Visib\n", false},
		{"BOM first", "\ufeff> Visibility: shared\n# T\n", true},
		{"BOM before title", "\ufeff# T\n> Visibility: shared\n", true},
		{"BOM on a later line", "# T\n\ufeff> Visibility: shared\n", false},
		{"after a ## entry", "# T\n> Summary: s\n\n## 2026-03-05\n> Visibility: shared\n", false},
		{"above a ## entry", "# T\n> Visibility: shared\n\n## 2026-03-05\n- x\n", true},
		{"### ends the header", "# T\n### Sub\n> Visibility: shared\n", false},
		{"a second title ends the header", "# T\n# U\n> Visibility: shared\n", false},
		{"in a fence", "# T\n```\n> Visibility: shared\n```\n", false},
		{"in a tilde fence", "# T\n~~~\n> Visibility: shared\n~~~\n", false},
		{"under a list item", "# T\n- x\n> Visibility: shared\n", false},
		{"indented under a list item", "# T\n- x\n  > Visibility: shared\n", false},
		{"under a numbered item", "# T\n1. x\n> Visibility: shared\n", false},
		{"under a star item", "* x\n> Visibility: shared\n", false},
		{"after a paragraph", "# T\nsome words\n> Visibility: shared\n", false},
		{"a file with no heading, far down", strings.Repeat("words and more words\n", 100) + "> Visibility: shared\n", false},
		{"under a summary and a blank line", "# T\n\n> Summary: s\n\n> Visibility: shared\n\n- x\n", true},
		{"above the title", "> Visibility: shared\n\n# T\n", true},
		{"a bare ## ends the header", "# T\n##\n> Visibility: shared\n", false},
		{"## with trailing spaces only ends it", "# T\n##   \n> Visibility: shared\n", false},
		{"shared then private", "# T\n> Visibility: shared\n> Visibility: private\n", false},
		{"private then shared", "# T\n> Visibility: private\n> Visibility: shared\n", false},
		{"shared then other", "# T\n> Visibility: shared\n> Visibility: sharde\n", false},
		{"shared twice", "# T\n> Visibility: shared\n> Visibility: shared\n", true},
		{"ends at 16 KB with its newline", upTo(summaryHead-len("> Visibility: shared\n")) + "> Visibility: shared\n" + "more", true},
		{"ends at 16 KB, the file too", upTo(summaryHead-len("> Visibility: shared")) + "> Visibility: shared", true},
		{"newline past 16 KB", upTo(summaryHead-len("> Visibility: shared")) + "> Visibility: shared\n", false},
		{"sharedNOT cut at 16 KB", upTo(summaryHead-len("> Visibility: shared")) + "> Visibility: sharedNOT\n", false},
		{"cut at 16 KB", upTo(summaryHead-len("> Visibility: share")) + "> Visibility: shared\n", false},
		{"past 16 KB", "# T\n" + pad + "> Visibility: shared\n", false},
		{"private past 16 KB does not count", "# T\n> Visibility: shared\n" + pad + "> Visibility: private\n", true},
	} {
		if got := IsShared(c.text); got != c.want {
			t.Errorf("%s: IsShared(%.80q) = %v; want %v", c.name, c.text, got, c.want)
		}
	}
}

func TestSetVisibility(t *testing.T) {
	for _, c := range []struct {
		name, text string
		shared     bool
		want       string
	}{
		{"under the summary", "# T\n\n> Summary: s\n\n- x\n", true, "# T\n\n> Summary: s\n> Visibility: shared\n\n- x\n"},
		{"under the first summary", "# T\n> Summary: a\n> Summary: b\n", true, "# T\n> Summary: a\n> Visibility: shared\n> Summary: b\n"},
		{"summary above the title", "> Summary: s\n# T\n", true, "> Summary: s\n> Visibility: shared\n# T\n"},
		{"under the title", "# T\n\n- x\n", true, "# T\n> Visibility: shared\n\n- x\n"},
		{"under the first title", "# A\n# B\n", true, "# A\n> Visibility: shared\n# B\n"},
		{"first", "- x\n- y\n", true, "> Visibility: shared\n- x\n- y\n"},
		{"empty", "", true, "> Visibility: shared\n"},
		{"a summary after ## is no header", "- x\n## E\n> Summary: s\n# T\n", true, "> Visibility: shared\n- x\n## E\n> Summary: s\n# T\n"},
		{"replaces private", "# T\n> Summary: s\n> Visibility: private\n", true, "# T\n> Summary: s\n> Visibility: shared\n"},
		{"drops every line", "> Visibility: private\n# T\n> visibility: SHARED\n> Summary: s\n> Visibility: x\n", true, "# T\n> Summary: s\n> Visibility: shared\n"},
		{"drops a line with no value", "# T\n> Visibility:\n", true, "# T\n> Visibility: shared\n"},
		{"keeps a line after ##", "# T\n> Summary: s\n## E\n> Visibility: private\n", true, "# T\n> Summary: s\n> Visibility: shared\n## E\n> Visibility: private\n"},
		{"private with no line stays without", "# T\n> Summary: s\n- x\n", false, "# T\n> Summary: s\n- x\n"},
		{"private with no line, a line after ##", "# T\n## E\n> Visibility: shared\n", false, "# T\n## E\n> Visibility: shared\n"},
		{"private where shared was", "# T\n> Summary: s\n> Visibility: shared\n- x\n", false, "# T\n> Summary: s\n> Visibility: private\n- x\n"},
		{"private where private was", "> Visibility: private\n# T\n", false, "# T\n> Visibility: private\n"},
		{"private, two lines become one", "# T\n> Visibility: shared\n> Visibility: shared\n", false, "# T\n> Visibility: private\n"},
		{"CRLF: the new line ends in LF", "# T\r\n> Summary: s\r\n> Visibility: private\r\n", true, "# T\r\n> Summary: s\r\n> Visibility: shared\n"},
	} {
		got := SetVisibility(c.text, c.shared)
		if got != c.want {
			t.Errorf("%s: SetVisibility(%q, %v) = %q; want %q", c.name, c.text, c.shared, got, c.want)
		}
		if IsShared(got) != c.shared {
			t.Errorf("%s: IsShared(SetVisibility(%q, %v)) = %v", c.name, c.text, c.shared, !c.shared)
		}
		if again := SetVisibility(got, c.shared); again != got {
			t.Errorf("%s: not idempotent: %q then %q", c.name, got, again)
		}
	}
}

// A header longer than what IsShared reads: the line goes under the
// summary while it ends, newline included, within summaryHead bytes, and
// first once it would not.
func TestSetVisibilityAtTheHeadLimit(t *testing.T) {
	const want = visibilityShared
	for _, bom := range []string{"", "\ufeff"} {
		// head is the text up to and with the summary line; the line goes
		// after it and a newline.
		for _, room := range []int{0, 1, 2} {
			headLen := summaryHead - len(bom) - len(want) - 2 + room
			summary := "> Summary: s"
			head := "# T\n>" + strings.Repeat("x", headLen-len("# T\n>")-len("\n"+summary)) + "\n" + summary
			if len(bom)+len(head) != headLen+len(bom) {
				t.Fatalf("bad setup: %d", len(head))
			}
			text := bom + head + "\n- fact\n"
			got := SetVisibility(text, true)
			under := bom + head + "\n" + want + "\n- fact\n"
			first := bom + want + "\n" + head + "\n- fact\n"
			switch {
			case room == 0 && got != under:
				t.Errorf("bom %q: a line ending at byte %d must go under the summary; got %.60q…", bom, summaryHead, got)
			case room > 0 && got != first:
				t.Errorf("bom %q: a line ending past byte %d must go first; got %.60q…", bom, summaryHead, got)
			}
			if !IsShared(got) {
				t.Errorf("bom %q, room %d: not shared", bom, room)
			}
		}
	}
}

// isVisLine is the test's own reading of a visibility line of a header:
// a quote line at the first byte naming visibility, in any spelling.
func isVisLine(l string) bool {
	t, ok := strings.CutPrefix(l, ">")
	if !ok {
		return false
	}
	t = strings.TrimSpace(t)
	return len(t) >= len("visibility:") && strings.EqualFold(t[:len("visibility:")], "visibility:")
}

// splitVis is text's lines without the visibility lines of its header
// block (blank lines, quote lines and one "# " title, from the top), and
// those lines.
func splitVis(text string) (rest, vis []string) {
	header, titled := true, false
	for _, l := range strings.Split(strings.TrimPrefix(text, "\ufeff"), "\n") {
		switch {
		case !header:
		case strings.TrimRight(l, " \t\r") == "" || strings.HasPrefix(l, ">"):
		case !titled && strings.HasPrefix(l, "# "):
			titled = true
		default:
			header = false
		}
		if header && isVisLine(l) {
			vis = append(vis, l)
			continue
		}
		rest = append(rest, l)
	}
	return rest, vis
}

// For any text: SetVisibility(t, s) is what IsShared reads as s, keeps
// every other line in order and a leading byte order mark, holds exactly
// one visibility line when it says shared or one was there (none
// otherwise), and is idempotent.
func FuzzVisibility(f *testing.F) {
	for _, s := range []string{
		"", "# T\n\n> Summary: s\n\n- x\n", "> Visibility: shared\n", "\ufeff> Visibility: private\n# T\n",
		"# T\n> Visibility: shared\n> Visibility: private\n", "# T\n## E\n> Visibility: shared\n",
		"# T\r\n> Summary: s\r\n", ">visibility:SHARED", "- x\n# T\n> Summary: s\n## E\n",
		"# T\n" + strings.Repeat("y", summaryHead) + "\n> Summary: s\n",
		"# T\n```\n> Visibility: shared\n```\n", "# T\n  > Visibility: shared\n", "- x\n> Visibility: shared\n",
		"# T\nwords\n> Visibility: shared\n", "# T\n> Visibility: sharedNOT\n", "# T\n> Visibility: shared \t\r\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		rest, vis := splitVis(text)
		// Shared exactly when the header block's visibility lines are all
		// the exact line (and there is one), for a text the index reads whole.
		exact := len(vis) > 0
		for _, v := range vis {
			exact = exact && strings.TrimRight(v, " \t\r") == visibilityShared
		}
		if len(text) <= summaryHead && IsShared(text) != exact {
			t.Fatalf("IsShared(%q) = %v; its header's visibility lines are %q", text, !exact, vis)
		}
		for _, shared := range []bool{true, false} {
			got := SetVisibility(text, shared)
			if IsShared(got) != shared {
				t.Fatalf("IsShared(SetVisibility(%q, %v)) = %v; got %q", text, shared, !shared, got)
			}
			if strings.HasPrefix(got, "\ufeff") != strings.HasPrefix(text, "\ufeff") {
				t.Fatalf("SetVisibility(%q, %v) = %q: the byte order mark moved", text, shared, got)
			}
			gotRest, gotVis := splitVis(got)
			if !slices.Equal(gotRest, rest) {
				t.Fatalf("SetVisibility(%q, %v) = %q: other lines changed", text, shared, got)
			}
			want := []string{}
			switch {
			case shared:
				want = []string{visibilityShared}
			case len(vis) > 0:
				want = []string{visibilityPrivate}
			}
			if !slices.Equal(gotVis, want) && !(len(gotVis) == 0 && len(want) == 0) {
				t.Fatalf("SetVisibility(%q, %v) = %q: visibility lines %q, want %q", text, shared, got, gotVis, want)
			}
			if again := SetVisibility(got, shared); again != got {
				t.Fatalf("SetVisibility not idempotent on %q: %q then %q", text, got, again)
			}
		}
	})
}

// An entry is appended to a month's shared file (episodes/YYYY-MM.shared.md,
// where a channel's reflection writes) as to its plain file: the month is
// the name without .shared. Before the fix every such append was refused
// ("the entry is dated 2026-03-09; append it to episodes/2026-03.md").
func TestAppendToASharedMonth(t *testing.T) {
	s := newStore(t)
	u := mustUser(t, s, "alice")
	if _, err := u.Append("episodes/2026-03.shared.md", "## Demo\n- Summary: demo\n- Date: 2026-03-09\n", "", nil); err != nil {
		t.Fatal(err)
	}
	want := "# 2026-03 Episodes\n\n> Summary: demo\n\n## Demo\n- Summary: demo\n- Date: 2026-03-09\n"
	if got := readFile(t, filepath.Join(s.Dir(), "alice/episodes/2026-03.shared.md")); got != want {
		t.Errorf("the shared month:\n%q\nwant\n%q", got, want)
	}
	if _, err := u.Append("episodes/2026-03.shared.md", "## Late\n- Summary: late\n- Date: 2026-04-01\n", "", nil); !errors.Is(err, ErrInvalid) ||
		!strings.Contains(err.Error(), "append it to episodes/2026-04.md") {
		t.Errorf("an entry of another month: %v", err)
	}
}

// An existing empty file is private: a channel's write or patch to the
// shared file of that name is refused as for any private one
// (NotWritableError), not told to read it first, which it never could
// (its memory_read answers "no such memory file").
func TestSharedViewWriteToAnEmptySharedName(t *testing.T) {
	s := newStore(t)
	u := mustUser(t, s, "alice")
	writeFile(t, filepath.Join(s.Dir(), "alice/facts/empty.shared.md"), "")
	v := NewView(u, true, nil)
	var nw *NotWritableError
	if err := v.Write("facts/empty.md", "# E\n\n> Summary: e\n"); !errors.As(err, &nw) || nw.Path != "facts/empty.md" {
		t.Errorf("write: %v", err)
	}
	if _, err := v.Patch("facts/empty.shared.md", []Patch{{OldText: "a", NewText: "b"}}); !errors.As(err, &nw) || nw.Path != "facts/empty.shared.md" {
		t.Errorf("patch: %v", err)
	}
	if got := readFile(t, filepath.Join(s.Dir(), "alice/facts/empty.shared.md")); got != "" {
		t.Errorf("the empty file was written: %q", got)
	}
}

// A channel's append to a month whose shared file is empty on disk waits
// for a save in place to finish, as any append does, rather than refusing
// it as private; a file that stays empty ends the wait as a conflict.
func TestSharedViewAppendToAnEmptySharedMonthWaits(t *testing.T) {
	s := newStore(t, func(o *Options) { o.EditWait = time.Nanosecond })
	u := mustUser(t, s, "alice")
	writeFile(t, filepath.Join(s.Dir(), "alice/episodes/2026-03.shared.md"), "")
	err := NewView(u, true, nil).Append("episodes/2026-03.md", "## T\n- Summary: s\n- Date: 2026-03-01\n", "")
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "empty on disk") {
		t.Errorf("append to an empty shared month = %v", err)
	}
}

// Every reader of visibility reads the same header: the index (List,
// ListShared), a channel's view (Read, List, Search) and IsShared agree on
// each case, long files (read by the index from their first 16 KiB) too.
// Before the fix a fence, an indented line, a line under a list item and
// "sharedNOT" cut at 16 KiB all read as shared.
func TestEveryReaderAgreesOnVisibility(t *testing.T) {
	const line = "> Visibility: shared"
	long := func(cut string) string { // the 16 KiB cut falls after cut's "shared"
		pad := "# Zebra\n>" + strings.Repeat("x", summaryHead-len("# Zebra\n>")-1-len(line)) + "\n"
		return pad + line + cut + "\n- zebra\n"
	}
	for _, c := range []struct {
		name, text string
		want       bool
	}{
		{"header", "# Zebra\n> Summary: zebra\n" + line + "\n\n- zebra\n", true},
		{"fence", "# Zebra\n```\n" + line + "\n```\n- zebra\n", false},
		{"indented", "# Zebra\n  " + line + "\n- zebra\n", false},
		{"under a list item", "# Zebra\n- zebra\n" + line + "\n", false},
		{"past the header", "# Zebra\nzebra notes\n\n" + line + "\n", false},
		{"no heading, far down", strings.Repeat("zebra words\n", 300) + line + "\n", false},
		{"sharedNOT", "# Zebra\n> Visibility: sharedNOT\n- zebra\n", false},
		{"sharedNOT cut at 16 KiB", long("NOT"), false},
		{"shared at 16 KiB", long(""), false}, // its newline is past what the index reads
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newStore(t)
			u := mustUser(t, s, "alice")
			writeFile(t, filepath.Join(s.Dir(), "alice/facts/zebra.md"), c.text)
			if got := IsShared(c.text); got != c.want {
				t.Errorf("IsShared = %v", got)
			}
			all, err := u.List()
			if err != nil || len(all) != 1 || all[0].Shared != c.want {
				t.Errorf("List = %+v, %v", all, err)
			}
			shared, err := u.ListShared()
			if err != nil || (len(shared) == 1) != c.want {
				t.Errorf("ListShared = %+v, %v", shared, err)
			}
			v := NewView(u, true, nil)
			if _, err := v.Read("facts/zebra.md"); (err == nil) != c.want {
				t.Errorf("a channel's Read: %v", err)
			}
			if l, err := v.List(); err != nil || (len(l) == 1) != c.want {
				t.Errorf("a channel's List = %+v, %v", l, err)
			}
			if f, err := v.Search("zebra", 5); err != nil || (len(f.Hits) > 0) != c.want {
				t.Errorf("a channel's Search = %+v, %v", f.Hits, err)
			}
		})
	}
}
