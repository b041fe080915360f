package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// editWorld is a memory folder with one fact of ann's and editor scripts.
type editWorld struct {
	dir, mem, fact string
	env            map[string]string
}

func newEditWorld(t *testing.T) *editWorld {
	t.Helper()
	dir := inTempDir(t)
	w := &editWorld{dir: dir, mem: filepath.Join(dir, "memory")}
	w.fact = filepath.Join(w.mem, "ann", "facts", "user.md")
	if err := os.MkdirAll(filepath.Dir(w.fact), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(w.fact, []byte("# Ann\n> Summary: who Ann is\n\n- Name: Ann\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	w.env = map[string]string{"MNEMO_DATA_DIR": w.mem, "TMPDIR": dir}
	return w
}

// editor installs a shell script as $EDITOR: run n (1, 2, …) runs
// steps[n-1] with the file to edit as $1.
func (w *editWorld) editor(t *testing.T, steps ...string) {
	t.Helper()
	script := "#!/bin/sh\nn=$(cat \"$0.n\" 2>/dev/null || echo 0); n=$((n+1)); echo $n > \"$0.n\"\ncase $n in\n"
	for i, s := range steps {
		script += "  " + strconv.Itoa(i+1) + ") " + s + " ;;\n"
	}
	script += "esac\n"
	p := filepath.Join(w.dir, "editor.sh")
	os.Remove(p + ".n")
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	w.env["EDITOR"] = p
}

// edit runs `mnemo memory edit` with answers on stdin.
func (w *editWorld) edit(t *testing.T, answers string, args ...string) cliResult {
	t.Helper()
	var out, errOut bytes.Buffer
	err := run(stopOn(context.Background()), append([]string{"memory", "edit"}, args...), func(k string) string { return w.env[k] }, strings.NewReader(answers), &out, &errOut)
	return cliResult{exitCode(err, &errOut), out.String(), errOut.String()}
}

func (w *editWorld) read(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(w.mem, "ann", p))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// leftovers lists the temporary copies left in TMPDIR.
func (w *editWorld) leftovers(t *testing.T) []string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(w.dir, "mnemo-edit-*"))
	return m
}

func TestMemoryEdit(t *testing.T) {
	const valid = "# Ann\n> Summary: who Ann is, and her team\n\n- Name: Ann\n- Team: search\n"
	t.Run("valid", func(t *testing.T) {
		w := newEditWorld(t)
		w.env["SUDO_USER"] = "alice-admin"
		w.editor(t, `printf '`+strings.ReplaceAll(valid, "\n", `\n`)+`' > "$1"`)
		w.edit(t, "", "ann", "facts/user.md").want(t, 0, "", "saved facts/user.md of ann")
		if got := w.read(t, "facts/user.md"); got != valid {
			t.Errorf("file = %q", got)
		}
		if l := w.leftovers(t); len(l) != 0 {
			t.Errorf("temporary copies left: %v", l)
		}
		// The history keeps the text before and the edit, under the admin's name.
		h := cli(t, w.env, "memory", "history", "ann", "facts/user.md")
		if !strings.Contains(h.stdout, "alice-admin (memory edit)") || !strings.Contains(h.stdout, "earlier text") {
			t.Errorf("history after an edit:\n%s", h.stdout)
		}
	})
	t.Run("invalid, reopened, fixed", func(t *testing.T) {
		w := newEditWorld(t)
		w.editor(t,
			`grep -v Summary "$1" > "$1.x" && mv "$1.x" "$1"`,                           // drops the summary
			`grep -q Summary "$1" && exit 9; printf '# Ann\n> Summary: fixed\n' > "$1"`, // the copy kept the bad text
		)
		r := w.edit(t, "e\n", "ann", "facts/user.md")
		r.want(t, 0, "", `facts/user.md is not saved; the edited text has 1 problem|has no "> Summary: ..." line|What now?|saved facts/user.md`)
		if got := w.read(t, "facts/user.md"); got != "# Ann\n> Summary: fixed\n" {
			t.Errorf("file = %q", got)
		}
	})
	t.Run("invalid, quit", func(t *testing.T) {
		w := newEditWorld(t)
		before := w.read(t, "facts/user.md")
		w.editor(t, `printf 'no title\n' > "$1"`)
		w.edit(t, "q\n", "ann", "facts/user.md").want(t, 1, "", `has no "# Title" line|facts/user.md of ann left as it was`)
		if w.read(t, "facts/user.md") != before {
			t.Error("a refused edit changed the file")
		}
		// The end of input is a quit too.
		w.editor(t, `printf 'no title\n' > "$1"`)
		w.edit(t, "", "ann", "facts/user.md").want(t, 1, "", "left as it was")
	})
	t.Run("a bot write meanwhile is shown, not overwritten", func(t *testing.T) {
		w := newEditWorld(t)
		racing := "# Ann\n> Summary: who Ann is\n\n- Name: Ann\n- Pet: a cat\n"
		w.editor(t,
			// While the person edits, the bot rewrites the file.
			`printf '`+strings.ReplaceAll(racing, "\n", `\n`)+`' > "`+w.fact+`"; printf '# Ann\n> Summary: mine\n' > "$1"`,
		)
		r := w.edit(t, "q\n", "ann", "facts/user.md")
		r.want(t, 1, "", "facts/user.md changed while you edited it|    - Pet: a cat|was not overwritten; your text is in ")
		if got := w.read(t, "facts/user.md"); got != racing {
			t.Errorf("the bot's write was overwritten: %q", got)
		}
		kept := w.leftovers(t)
		if len(kept) != 1 {
			t.Fatalf("kept copies %v, want the person's text kept", kept)
		}
		if b, _ := os.ReadFile(kept[0]); string(b) != "# Ann\n> Summary: mine\n" {
			t.Errorf("kept copy = %q", b)
		}
		// The edit, kept before the write, is followed by the file as it
		// is: the history's newest version is the file again.
		h := cli(t, w.env, "memory", "history", "ann", "facts/user.md")
		if rows := strings.Split(h.stdout, "\n"); len(rows) < 2 || !strings.Contains(rows[1], "memory edit not saved; as it is") {
			t.Errorf("history after an edit not saved:\n%s", h.stdout)
		}

		// Edit again: the change is redone on top of the bot's version.
		w.editor(t,
			`sed -i 's/a cat/a dog/' "`+w.fact+`"; printf '# Ann\n> Summary: mine\n' > "$1"`,
			`grep -q mine "$1" || exit 9; printf '# Ann\n> Summary: mine\n- Pet: a dog\n' > "$1"`,
		)
		w.edit(t, "e\n", "ann", "facts/user.md").want(t, 0, "", "changed while you edited it|    - Pet: a dog|saved facts/user.md")
		if got := w.read(t, "facts/user.md"); got != "# Ann\n> Summary: mine\n- Pet: a dog\n" {
			t.Errorf("file = %q", got)
		}
	})
	t.Run("deleted meanwhile, on a terminal's files", func(t *testing.T) {
		w := newEditWorld(t)
		w.editor(t, `rm "`+w.fact+`"; printf '# Ann\n> Summary: mine\n' > "$1"`)
		// Real files for stdin and stdout, as at a terminal: the editor
		// gets them, the answer is still read from stdin.
		in, out := filepath.Join(w.dir, "in"), filepath.Join(w.dir, "out")
		os.WriteFile(in, []byte("q\n"), 0o600)
		stdin, _ := os.Open(in)
		defer stdin.Close()
		stdout, _ := os.Create(out)
		defer stdout.Close()
		var errOut bytes.Buffer
		err := run(stopOn(context.Background()), []string{"memory", "edit", "ann", "facts/user.md"}, func(k string) string { return w.env[k] }, stdin, stdout, &errOut)
		r := cliResult{exitCode(err, &errOut), "", errOut.String()}
		r.want(t, 1, "", "changed while you edited it|    (deleted)|was not overwritten")
	})
	t.Run("over the write cap", func(t *testing.T) {
		w := newEditWorld(t)
		os.WriteFile(filepath.Join(w.dir, "mnemo.yaml"), []byte("memory:\n  writeCap: 1024\n"), 0o600)
		w.editor(t, `printf '# Ann\n> Summary: long\n' > "$1"; yes x | head -c 2000 >> "$1"`)
		w.edit(t, "", "ann", "facts/user.md").want(t, 1, "", "the limit is 1024 (memory.writeCap)|your text is in "+w.dir)
		if len(w.leftovers(t)) != 1 {
			t.Error("the text that could not be written was not kept")
		}
	})
	t.Run("new episode file", func(t *testing.T) {
		w := newEditWorld(t)
		w.editor(t, `sed -i 's/^> Summary: $/> Summary: November/' "$1"`)
		w.edit(t, "", "ann", "episodes/2026-11.md").want(t, 0, "", "saved episodes/2026-11.md")
		if got := w.read(t, "episodes/2026-11.md"); !strings.HasPrefix(got, "# Episodes of 2026-11\n> Summary: November\n") || !strings.Contains(got, "- Date: 2026-11-01") {
			t.Errorf("file = %q", got)
		}
	})
	t.Run("unchanged", func(t *testing.T) {
		w := newEditWorld(t)
		w.editor(t, `true`)
		w.edit(t, "", "ann", "facts/user.md").want(t, 0, "", "unchanged; nothing written")
		w.edit(t, "", "ann", "facts/new.md").want(t, 0, "", "unchanged; nothing written")
		if _, err := os.Stat(filepath.Join(w.mem, "ann", "facts", "new.md")); !os.IsNotExist(err) {
			t.Error("an untouched template was written")
		}
	})
	t.Run("editor fails", func(t *testing.T) {
		w := newEditWorld(t)
		before := w.read(t, "facts/user.md")
		w.editor(t, `printf 'x' > "$1"; exit 3`)
		w.edit(t, "", "ann", "facts/user.md").want(t, 1, "", "the editor ("+w.env["EDITOR"]+") failed|exit status 3|nothing was written")
		if w.read(t, "facts/user.md") != before || len(w.leftovers(t)) != 0 {
			t.Error("a failed editor changed the file or left its copy")
		}
		// VISUAL wins over EDITOR.
		w.env["VISUAL"] = "false"
		w.edit(t, "", "ann", "facts/user.md").want(t, 1, "", "the editor (false) failed")
	})
	t.Run("usage", func(t *testing.T) {
		w := newEditWorld(t)
		w.edit(t, "", "ann").want(t, 2, "", "memory edit takes 2 arguments|usage: mnemo memory edit USER PATH")
		w.edit(t, "", "ann", "notes.txt").want(t, 2, "", "notes.txt")
		w.env["EDITOR"] = "true"
		w.env["TMPDIR"] = filepath.Join(w.dir, "missing")
		w.edit(t, "", "ann", "facts/user.md").want(t, 1, "", "set TMPDIR to a writable folder")
	})
}

// TestMemoryEditCannotRead: a file that cannot be read, or a copy the
// editor removed, ends the edit with the reason and nothing written.
func TestMemoryEditCannotRead(t *testing.T) {
	t.Run("a folder where the file would be", func(t *testing.T) {
		w := newEditWorld(t)
		if err := os.Mkdir(filepath.Join(w.mem, "ann", "facts", "team.md"), 0o700); err != nil {
			t.Fatal(err)
		}
		w.editor(t, `true`)
		r := w.edit(t, "", "ann", "facts/team.md")
		r.want(t, 1, "", "facts/team.md")
		if len(w.leftovers(t)) != 0 {
			t.Error("a copy was made of a file that could not be read")
		}
	})
	t.Run("the editor removed the copy", func(t *testing.T) {
		w := newEditWorld(t)
		before := w.read(t, "facts/user.md")
		w.editor(t, `rm "$1"`)
		w.edit(t, "", "ann", "facts/user.md").want(t, 1, "", "read the edited copy")
		if w.read(t, "facts/user.md") != before {
			t.Error("the file changed")
		}
	})
}
