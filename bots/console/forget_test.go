package console

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mnemo-agent/mnemo/bots/internal/bottest"
	"github.com/mnemo-agent/mnemo/bots/internal/memorycmd"
)

// checked is a memory whose file names are facts/<name>.md.
func checked() *bottest.Memory {
	return &bottest.Memory{Check: func(p string) error {
		if !strings.HasPrefix(p, "facts/") || !strings.HasSuffix(p, ".md") {
			return errors.New("bad path")
		}
		return nil
	}}
}

// The terminal's forget is /memory forget, confirmed by typing /forget yes
// (no buttons); /forget is /memory forget all; /forget yes with no question
// asked deletes everything at once, as it always did; any other line
// cancels the question.
func TestForgetCommand(t *testing.T) {
	const askAll = "This deletes **everything** I remember about you (every fact and episode file). It cannot be undone.\n" +
		"Type **/forget yes** to confirm (within 10 minutes); anything else cancels.\n"
	for _, c := range []struct {
		name, in string
		want     string   // the output
		forgot   []string // what the memory was asked to forget
		tasks    int      // messages that reached the model
	}{
		{"/forget asks, /forget yes deletes", "/forget\n/forget yes\n", askAll + "Done: I deleted everything I remembered about you.\n", []string{"ann:"}, 0},
		{"/memory forget all is the same", "/memory forget all\n/memory forget yes\n", askAll + "Done: I deleted everything I remembered about you.\n", []string{"ann:"}, 0},
		{"one file", "/memory forget facts/food.md\n/forget yes\n",
			"This deletes `facts/food.md`. It cannot be undone.\nType **/forget yes** to confirm (within 10 minutes); anything else cancels.\nDone: I deleted `facts/food.md`.\n", []string{"ann:facts/food.md"}, 0},
		{"/forget FILE is /memory forget FILE", "/forget facts/food.md\n/forget yes\n",
			"This deletes `facts/food.md`. It cannot be undone.\nType **/forget yes** to confirm (within 10 minutes); anything else cancels.\nDone: I deleted `facts/food.md`.\n", []string{"ann:facts/food.md"}, 0},
		{"a message cancels the question", "/forget facts/food.md\nhello\n/forget yes\n",
			"This deletes `facts/food.md`. It cannot be undone.\nType **/forget yes** to confirm (within 10 minutes); anything else cancels.\necho: hello\nline two\nDone: I deleted everything I remembered about you.\n", []string{"ann:"}, 1},
		{"another command cancels it too", "/forget\n/memory ls\n/memory forget yes\n", askAll + "shown\nDone: I deleted everything I remembered about you.\n", []string{"ann:"}, 0},
		{"/forget yes at once", "/forget yes\n", "Done: I deleted everything I remembered about you.\n", []string{"ann:"}, 0},
		{"not a file", "/forget now\n", "`now` is not a memory file. " + memorycmd.PathGrammar + "\n", nil, 0},
		{"/forgetful is a message", "/forgetful\n", "echo: /forgetful\nline two\n", nil, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := &fakeHandler{}
			mem := checked()
			mem.ShowText = "shown"
			var out strings.Builder
			err := Run(context.Background(), Config{In: strings.NewReader(c.in), Out: &out, User: "ann", Chat: chatOf(t, "ann", h, withMemory(mem))})
			if err != nil || out.String() != c.want || strings.Join(mem.Forgotten(), " ") != strings.Join(c.forgot, " ") || len(h.tasks) != c.tasks {
				t.Errorf("err %v, tasks %d, forgot %v, output\n%s\nwant\n%s", err, len(h.tasks), mem.Forgotten(), out.String(), c.want)
			}
		})
	}

	// A failed forget says why; without a memory, /forget yes says there is none.
	mem := checked()
	mem.ForgetErr = errors.New("disk gone")
	var out strings.Builder
	Run(context.Background(), Config{In: strings.NewReader("/forget yes\n"), Out: &out, User: "ann", Chat: chatOf(t, "ann", &fakeHandler{}, withMemory(mem))})
	if out.String() != "Sorry, I couldn't delete everything I remembered about you: disk gone\n" {
		t.Errorf("error output %q", out.String())
	}
	out.Reset()
	Run(context.Background(), Config{In: strings.NewReader("/forget yes\n"), Out: &out, User: "ann", Chat: chatOf(t, "ann", &fakeHandler{})})
	if out.String() != memorycmd.NoMemoryText+"\n" {
		t.Errorf("no memory: %q", out.String())
	}
}

// historyForget is a memory whose forget of everything deletes the chat's
// history file, as the app's does (or fails).
type historyForget struct {
	*bottest.Memory
	file string
	err  error
}

func (h historyForget) Forget(user, path string) error {
	if h.err != nil {
		return h.err
	}
	os.Remove(h.file)
	return h.Memory.Forget(user, path)
}

// At a terminal a forget of everything drops the line history, so nothing
// typed before comes back; a failed one keeps it.
func TestForgetDropsTheHistory(t *testing.T) {
	file := filepath.Join(t.TempDir(), "ann.history")
	h := &fakeHandler{}
	var out strings.Builder
	err := Run(context.Background(), Config{In: strings.NewReader("secret line\r/forget yes\rafter\r"), Out: &out, Interactive: true, User: "ann", History: file,
		Chat: chatOf(t, "ann", h, withMemory(historyForget{checked(), file, nil}))})
	if err != nil || !strings.Contains(out.String(), "Done: I deleted everything") {
		t.Fatalf("err %v, output %q", err, out.String())
	}
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		b, _ := os.ReadFile(file)
		t.Errorf("history file written again after /forget: %q", b)
	}
	err = Run(context.Background(), Config{In: strings.NewReader("kept\r/forget yes\r"), Out: &out, Interactive: true, User: "ann", History: file,
		Chat: chatOf(t, "ann", h, withMemory(historyForget{checked(), file, errors.New("no")}))})
	if b, _ := os.ReadFile(file); err != nil || !strings.Contains(string(b), "kept") {
		t.Errorf("history after a failed forget: %q, %v", b, err)
	}
}
