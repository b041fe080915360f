package memory

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

type tarEntry struct {
	name    string
	typ     byte
	mode    int64
	modTime time.Time
	body    string
}

func readTarGz(t *testing.T, data []byte) []tarEntry {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("not gzip: %v", err)
	}
	tr := tar.NewReader(zr)
	var out []tarEntry
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("bad tar: %v", err)
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, tarEntry{h.Name, h.Typeflag, h.Mode, h.ModTime, string(body)})
	}
	if _, err := io.ReadAll(zr); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestExport(t *testing.T) {
	s, root := checkStore(t)
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	files := map[string]string{
		"alice/facts/user.md":       userFact,
		"alice/facts/pets.md":       "# Pets\n\n> Summary: a cat\n",
		"alice/episodes/2026-01.md": goodEpisodes,
		"alice/facts/notes.txt":     "not memory",
		"alice/notes.txt":           "not memory",
		"alice/facts/.user.md.swp":  "swap",
		"alice/facts/a.md":          "linked",
		"bob/facts/user.md":         "bob's",
	}
	for rel, content := range files {
		writeFile(t, filepath.Join(root, rel), content)
		if err := os.Chtimes(filepath.Join(root, rel), at, at); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Link(filepath.Join(root, "alice/facts/a.md"), filepath.Join(root, "alice/facts/b.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../../bob/facts/user.md", filepath.Join(root, "alice/facts/bob.md")); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	rep, err := mustUser(t, s, "alice").Export(&buf)
	if err != nil {
		t.Fatalf("Export: %v", err)
	}
	want := []tarEntry{
		{name: "alice/", typ: tar.TypeDir, mode: 0o700},
		{name: "alice/facts/", typ: tar.TypeDir, mode: 0o700},
		{name: "alice/facts/pets.md", typ: tar.TypeReg, mode: 0o600, modTime: at, body: files["alice/facts/pets.md"]},
		{name: "alice/facts/user.md", typ: tar.TypeReg, mode: 0o600, modTime: at, body: userFact},
		{name: "alice/episodes/", typ: tar.TypeDir, mode: 0o700},
		{name: "alice/episodes/2026-01.md", typ: tar.TypeReg, mode: 0o600, modTime: at, body: goodEpisodes},
	}
	got := readTarGz(t, buf.Bytes())
	if len(got) != len(want) {
		t.Fatalf("archive holds %+v", got)
	}
	for i, w := range want {
		g := got[i]
		if g.name != w.name || g.typ != w.typ || g.mode != w.mode || g.body != w.body || (w.typ == tar.TypeReg && !g.modTime.Equal(w.modTime)) {
			t.Errorf("entry %d = %+v, want %+v", i, g, w)
		}
	}
	if rep.Files != 3 || rep.Bytes != int64(len(userFact)+len(goodEpisodes)+len(files["alice/facts/pets.md"])) {
		t.Errorf("report = %+v", rep)
	}
	var skipped []string
	for _, p := range rep.Skipped {
		skipped = append(skipped, p.String())
	}
	wantSkipped := []string{
		"alice/facts/a.md: not a regular file (it has 2 hard links",
		"alice/facts/b.md: not a regular file (it has 2 hard links",
		"alice/facts/bob.md: not a regular file (it is a symlink)",
	}
	if len(skipped) != len(wantSkipped) {
		t.Fatalf("skipped = %q", skipped)
	}
	for i := range skipped {
		if !strings.HasPrefix(skipped[i], wantSkipped[i]) || !strings.HasSuffix(skipped[i], "; not exported") {
			t.Errorf("skipped %q, want %q...", skipped[i], wantSkipped[i])
		}
	}
}

func TestExportShapes(t *testing.T) {
	s, root := checkStore(t)
	// A file over the read limit is exported whole: it is streamed.
	big := strings.Repeat("x", maxFileSize+10)
	writeFile(t, filepath.Join(root, "alice/episodes/2026-01.md"), big)
	if err := os.Symlink("episodes", filepath.Join(root, "alice/facts")); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	rep, err := mustUser(t, s, "alice").Export(&buf)
	if err != nil {
		t.Fatal(err)
	}
	got := readTarGz(t, buf.Bytes())
	if len(got) != 3 || got[2].name != "alice/episodes/2026-01.md" || got[2].body != big {
		t.Errorf("archive: %d entries", len(got))
	}
	if len(rep.Skipped) != 1 || rep.Skipped[0].String() != "alice/facts: is a symlink, not a folder; not exported" {
		t.Errorf("skipped = %+v", rep.Skipped)
	}

	// An empty folder is an archive with the folder only.
	if err := os.Mkdir(filepath.Join(root, "bob"), 0o700); err != nil {
		t.Fatal(err)
	}
	buf.Reset()
	if rep, err := mustUser(t, s, "bob").Export(&buf); err != nil || rep.Files != 0 {
		t.Fatal(rep, err)
	}
	if got := readTarGz(t, buf.Bytes()); len(got) != 1 || got[0].name != "bob/" {
		t.Errorf("empty archive = %+v", got)
	}

	if _, err := mustUser(t, s, "nobody").Export(io.Discard); !errors.Is(err, ErrNotFound) {
		t.Errorf("Export(no folder) = %v", err)
	}
	if err := os.Symlink("bob", filepath.Join(root, "carol")); err != nil {
		t.Fatal(err)
	}
	if _, err := mustUser(t, s, "carol").Export(io.Discard); err == nil || !strings.Contains(err.Error(), "symlink") {
		t.Errorf("Export(symlinked folder) = %v", err)
	}
	// A file that cannot be opened (here: a folder named like a file is a
	// not-regular skip; a FIFO likewise) never hangs the export.
	if err := os.Mkdir(filepath.Join(root, "bob/facts"), 0o700); err != nil {
		t.Fatal(err)
	}
	fifo("bob/facts/pipe.md")(t, root)
	mkdir("bob/facts/dir.md")(t, root)
	if rep, err := mustUser(t, s, "bob").Export(io.Discard); err != nil || len(rep.Skipped) != 2 {
		t.Errorf("Export = %+v, %v", rep, err)
	}
}

// failAfter accepts n bytes, then fails every write.
type failAfter struct{ n int }

func (w *failAfter) Write(p []byte) (int, error) {
	if len(p) > w.n {
		k := w.n
		w.n = 0
		return k, errors.New("broken pipe")
	}
	w.n -= len(p)
	return len(p), nil
}

// TestExportBrokenPipe cuts the output at many points: every cut is
// reported, none is taken for a complete archive.
func TestExportBrokenPipe(t *testing.T) {
	s, root := checkStore(t)
	rng := rand.New(rand.NewChaCha8([32]byte{1}))
	noise := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.UintN(256))
		}
		return string(b)
	}
	writeFile(t, filepath.Join(root, "alice/facts/a.md"), noise(70000))
	writeFile(t, filepath.Join(root, "alice/facts/b.md"), noise(70000))
	writeFile(t, filepath.Join(root, "alice/episodes/2026-01.md"), noise(70000))
	u := mustUser(t, s, "alice")
	var full bytes.Buffer
	if _, err := u.Export(&full); err != nil {
		t.Fatal(err)
	}
	for cut := 0; cut < full.Len(); cut += full.Len()/23 + 1 {
		if _, err := u.Export(&failAfter{n: cut}); err == nil || !strings.Contains(err.Error(), "broken pipe") {
			t.Fatalf("cut at %d: err = %v", cut, err)
		}
	}
}

func TestExportShrinking(t *testing.T) {
	s, root := checkStore(t)
	p := filepath.Join(root, "alice/facts/a.md")
	rng := rand.New(rand.NewChaCha8([32]byte{2}))
	b := make([]byte, 200000)
	for i := range b {
		b[i] = byte(rng.UintN(256))
	}
	writeFile(t, p, string(b))
	// A writer that truncates the file in place while its data is being
	// archived (its second write: the first is the gzip header): a person
	// editing it during the export.
	w := &hookWriter{hook: func() { _ = os.Truncate(p, 10) }}
	_, err := mustUser(t, s, "alice").Export(w)
	if err == nil || !strings.Contains(err.Error(), "shrank") {
		t.Errorf("Export = %v", err)
	}
}

type hookWriter struct {
	hook   func()
	writes int
}

func (w *hookWriter) Write(p []byte) (int, error) {
	if w.writes++; w.writes == 2 {
		w.hook()
	}
	return len(p), nil
}
