package memory

import (
	"strings"
	"testing"
	"unsafe"
)

// An entry keeps its summary only, never the start of the file it was
// read from: a one-word summary is a substring of that text, and kept as
// such it would hold up to 16 KB per file for as long as the entry lives.
func TestEntryKeepsOnlyItsSummary(t *testing.T) {
	head := "# Prefs\n\n> Summary: preferences\n\n" + strings.Repeat("- a fact\n", 1000)
	e := fileEntry(head, int64(len(head)), statKey{}, 0)
	if e.Summary != "preferences" || e.Size != int64(len(head)) || e.Shared {
		t.Fatalf("entry %+v", e)
	}
	start := uintptr(unsafe.Pointer(unsafe.StringData(head)))
	if p := uintptr(unsafe.Pointer(unsafe.StringData(e.Summary))); p >= start && p < start+uintptr(len(head)) {
		t.Error("the summary points into the file's text")
	}
	if e := fileEntry(SetVisibility(head, true), 1, statKey{}, 0); !e.Shared {
		t.Error("a shared file's entry is not shared")
	}
}
