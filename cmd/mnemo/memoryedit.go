package main

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"strings"
	"time"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/memory"
)

// newFileText is what `memory edit` offers for a file that does not exist.
func newFileText(p string) string {
	text := "# Title\n> Summary: a few words on what this file holds\n\n"
	if k, _ := memory.ParsePath(p); k == memory.KindEpisode {
		month := strings.TrimSuffix(path.Base(memory.PrivateName(p)), ".md") // episodes/2026-03.shared.md is March's too
		text = "# Episodes of " + month + "\n> Summary: \n\n## Title of what happened\n- Summary: a few words\n- Date: " + month + "-01\n\nDetails.\n"
	}
	// A *.shared.md file is a channel's reflection's: made shared, as it would.
	return memory.SetVisibility(text, memory.IsSharedName(p))
}

// edit is `mnemo memory edit USER PATH` (USER may be a channel's memory,
// '#slack-T01-C02'), as visudo is for sudoers: the file is copied to a
// private temporary file, $VISUAL or $EDITOR (default vi) edits the copy,
// and the saved text is checked as `memory check` would; problems are
// listed and the copy reopened (or the edit dropped).
// The text is then written atomically, and only if the file is still the
// version the edit started from: a bot write or another edit meanwhile is
// shown and nothing is overwritten.
func (m *memoryCmd) edit(ctx context.Context, name, p string) error {
	u, err := m.store.User(name)
	if err != nil {
		return err
	}
	doc, err := readOrNew(u, p)
	if err != nil {
		return err
	}
	copyPath, err := m.writeEditCopy(name, p, doc.Text)
	if err != nil {
		return err
	}
	keep := false // the copy outlives the command when it holds unsaved text
	defer func() {
		if !keep {
			os.Remove(copyPath)
		}
	}()
	answers := bufio.NewReader(m.env.stdin)
	base, baseText := doc.Version, doc.Text
	for {
		data, err := m.editCopy(ctx, copyPath)
		if err != nil {
			return err
		}
		if string(data) == doc.Text && base.Same(doc.Version) {
			_, err := fmt.Fprintf(m.env.stderr, "mnemo: %s of %s unchanged; nothing written\n", p, name)
			return err
		}
		again, err := m.rejectProblems(name, p, data, answers)
		if err != nil {
			return err
		}
		if again {
			continue
		}
		// Kept in the history before the write, as a restore is: a running
		// chat's or serve's watcher then finds the text already kept and
		// does not record the same change again as a hand edit.
		recErr := m.recordEdit(name, p, base, baseText, data)
		_, err = u.Replace(p, string(data), base, nil)
		if err != nil && recErr == nil {
			m.unrecordEdit(u, name, p)
		}
		if errors.Is(err, memory.ErrConflict) {
			now, again, err := m.showConflict(u, p, answers)
			if err != nil {
				return err
			}
			if !again {
				keep = true
				return failure(fmt.Errorf("memory edit: %s of %s changed meanwhile and was not overwritten; your text is in %s", p, name, copyPath))
			}
			base, baseText = now.Version, now.Text
			continue
		}
		if err != nil {
			keep = true
			return failure(fmt.Errorf("memory edit: %w; your text is in %s", err, copyPath))
		}
		return m.saved(name, p, data, recErr)
	}
}

// readOrNew reads the file to edit, or offers newFileText for one that
// does not exist yet.
func readOrNew(u *memory.User, p string) (memory.Doc, error) {
	doc, err := u.Read(p)
	switch {
	case errors.Is(err, memory.ErrNotFound):
		return memory.Doc{Path: p, Text: newFileText(p)}, nil
	case err != nil:
		return memory.Doc{}, failure(err)
	}
	return doc, nil
}

// writeEditCopy writes text to the private temporary copy the editor
// opens and returns its path; the copy is removed again when the write fails.
func (m *memoryCmd) writeEditCopy(name, p, text string) (string, error) {
	// Private (0600) and named after the file, so editors highlight Markdown.
	// A channel's '#' is left out: some editors give it a meaning.
	tmp, err := os.CreateTemp(m.env.getenv("TMPDIR"), "mnemo-edit-"+strings.TrimPrefix(name, mnemo.ChannelPrefix)+"-*-"+path.Base(p))
	if err != nil {
		return "", failure(fmt.Errorf("memory edit: a temporary copy: %w; set TMPDIR to a writable folder", err))
	}
	copyPath := tmp.Name()
	_, werr := tmp.WriteString(text)
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		os.Remove(copyPath)
		return "", failure(fmt.Errorf("memory edit: write %s: %w", copyPath, werr))
	}
	return copyPath, nil
}

// editCopy opens the copy in the editor and returns the text it was saved with.
func (m *memoryCmd) editCopy(ctx context.Context, copyPath string) ([]byte, error) {
	if err := m.runEditor(ctx, copyPath); err != nil {
		return nil, err
	}
	data, err := os.ReadFile(copyPath)
	if err != nil {
		return nil, failure(fmt.Errorf("memory edit: read the edited copy %s: %w", copyPath, err))
	}
	return data, nil
}

// rejectProblems checks the edited text as `memory check` would. When it
// has problems, they are listed and the person is asked what now: again
// is true to reopen the editor, an error ends the edit with nothing
// written. Text without problems gives (false, nil).
func (m *memoryCmd) rejectProblems(name, p string, data []byte, answers *bufio.Reader) (again bool, err error) {
	problems, err := m.store.CheckText(name, p, data)
	if err != nil {
		return false, failure(err)
	}
	if len(problems) == 0 {
		return false, nil
	}
	fmt.Fprintf(m.env.stderr, "mnemo: %s is not saved; the edited text has %d problem%s:\n", p, len(problems), plural(len(problems)))
	for _, pr := range problems {
		fmt.Fprintf(m.env.stderr, "  %s %s\n", p, pr.Detail)
	}
	if again, err := askAgain(m.env.stderr, answers); err != nil || !again {
		return false, failure(fmt.Errorf("memory edit: %s of %s left as it was", p, name))
	}
	return true, nil
}

// showConflict shows what the file reads now that it changed during the
// edit, and asks whether to edit again on top of that (again); now is the
// version a new attempt starts from.
func (m *memoryCmd) showConflict(u *memory.User, p string, answers *bufio.Reader) (now memory.Doc, again bool, err error) {
	now, err = u.Read(p)
	if err != nil && !errors.Is(err, memory.ErrNotFound) {
		return memory.Doc{}, false, failure(err)
	}
	fmt.Fprintf(m.env.stderr, "mnemo: %s changed while you edited it (a bot write or another edit); nothing was written. It now reads:\n%s", p, indent(now.Text))
	fmt.Fprintln(m.env.stderr, "Edit again to redo your change on top of that (your text is kept in the editor).")
	again, err = askAgain(m.env.stderr, answers)
	return now, err == nil && again, nil
}

// saved says a written edit is saved, and that the history could not keep
// it when recErr says so (not fatal: the text is saved).
func (m *memoryCmd) saved(name, p string, data []byte, recErr error) error {
	if recErr != nil {
		fmt.Fprintf(m.env.stderr, "mnemo: saved, but the history could not keep it: %v\n", recErr)
	}
	_, err := fmt.Fprintf(m.env.stderr, "mnemo: saved %s of %s (%s)\n", p, name, memory.FormatSize(int64(len(data))))
	return err
}

// indent shows a file's text set off from the messages around it.
func indent(text string) string {
	if text == "" {
		return "    (deleted)\n"
	}
	return "    " + strings.ReplaceAll(strings.TrimRight(text, "\n"), "\n", "\n    ") + "\n"
}

// askAgain asks whether to reopen the editor: yes unless the answer
// starts with q or n; the end of input is no.
func askAgain(w io.Writer, r *bufio.Reader) (bool, error) {
	fmt.Fprint(w, "What now? (e)dit again, (q)uit without saving [e]: ")
	line, err := r.ReadString('\n')
	if err != nil && (line == "" || !errors.Is(err, io.EOF)) {
		fmt.Fprintln(w)
		return false, err
	}
	a := strings.ToLower(strings.TrimSpace(line))
	return !strings.HasPrefix(a, "q") && !strings.HasPrefix(a, "n"), nil
}

// runEditor runs $VISUAL, else $EDITOR, else vi on file, through the
// shell as git does, so "code --wait" works. The editor gets the terminal
// when mnemo has one.
func (m *memoryCmd) runEditor(ctx context.Context, file string) error {
	editor := strings.TrimSpace(m.env.getenv("VISUAL"))
	if editor == "" {
		editor = strings.TrimSpace(m.env.getenv("EDITOR"))
	}
	if editor == "" {
		editor = "vi"
	}
	cmd := exec.CommandContext(ctx, "sh", "-c", editor+` "$@"`, editor, file)
	// Only a real file is handed over: an io.Reader would be copied into
	// the editor whole, eating the answers to "What now?".
	if f, ok := m.env.stdin.(*os.File); ok {
		cmd.Stdin = f
	}
	cmd.Stdout, cmd.Stderr = m.env.stderr, m.env.stderr
	if f, ok := m.env.stdout.(*os.File); ok {
		cmd.Stdout = f
	}
	if err := cmd.Run(); err != nil {
		return failure(fmt.Errorf("memory edit: the editor (%s) failed: %w; nothing was written (set VISUAL or EDITOR to an editor that exits 0 on save)", editor, err))
	}
	return nil
}

// unrecordEdit follows an edit kept in the history but not written (the
// file changed meanwhile, or the write failed) with the file as it is, so
// the history's newest version is the file again, as after a failed restore.
func (m *memoryCmd) unrecordEdit(u *memory.User, name, p string) {
	h, err := openHistory(m.cfg, time.Now)
	if err != nil {
		return
	}
	defer h.Close()
	doc, err := u.Read(p)
	switch {
	case err == nil:
		h.Record(name, p, []byte(doc.Text), "memory edit not saved; as it is")
	case errors.Is(err, memory.ErrNotFound):
		h.RecordDelete(name, p, nil, "memory edit not saved; no file")
	}
}

// recordEdit keeps the edit in the history under the admin's name
// ($SUDO_USER, else $USER), after the text it replaced when the history
// does not have it yet.
func (m *memoryCmd) recordEdit(name, p string, base memory.Version, before string, after []byte) error {
	h, err := openHistory(m.cfg, time.Now)
	if err != nil {
		return err
	}
	defer h.Close()
	if base.Exists {
		if _, _, err := h.Record(name, p, []byte(before), "earlier text"); err != nil {
			return err
		}
	}
	admin := cmp.Or(m.env.getenv("SUDO_USER"), m.env.getenv("USER"), "an admin")
	_, _, err = h.Record(name, p, after, admin+" (memory edit)")
	return err
}
