package console

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// /forget asks first; /forget yes calls Forget; an error is shown; at a
// terminal the line history is dropped so nothing typed before comes back.
func TestForgetCommand(t *testing.T) {
	h := &fakeHandler{}
	var out strings.Builder
	var forgot []string
	forget := func(user string) (string, error) { forgot = append(forgot, user); return "forgotten", nil }
	err := Run(context.Background(), Config{In: strings.NewReader("/forget\n/forget yes\n/forget now\n"), Out: &out, User: "ann", Handler: h, Forget: forget})
	if err != nil || len(h.tasks) != 0 || strings.Join(forgot, ",") != "ann" {
		t.Fatalf("err %v, tasks %d, forgot %v", err, len(h.tasks), forgot)
	}
	if want := "This deletes everything mnemo remembers about you, ann, and what you typed here earlier; it cannot be undone. To go ahead, type: /forget yes\nforgotten\nThis deletes"; !strings.HasPrefix(out.String(), want) {
		t.Errorf("output %q", out.String())
	}
	out.Reset()
	Run(context.Background(), Config{In: strings.NewReader("/forget yes\n"), Out: &out, User: "ann", Handler: h,
		Forget: func(string) (string, error) { return "", errors.New("disk gone") }})
	if out.String() != "mnemo: could not forget: disk gone\n" {
		t.Errorf("error output %q", out.String())
	}
	// Without Forget, /forget is a message like any other.
	Run(context.Background(), Config{In: strings.NewReader("/forget yes\n"), Out: &out, User: "ann", Handler: h})
	if len(h.tasks) != 1 || h.tasks[0].Text != "/forget yes" {
		t.Errorf("tasks %+v", h.tasks)
	}

	// At a terminal: the history file the caller deletes is not written again.
	file := filepath.Join(t.TempDir(), "ann.history")
	out.Reset()
	err = Run(context.Background(), Config{In: strings.NewReader("secret line\r/forget yes\rafter\r"), Out: &out, Interactive: true, User: "ann", Handler: h, History: file,
		Forget: func(string) (string, error) { return "forgotten", os.Remove(file) }})
	if err != nil || !strings.Contains(out.String(), "forgotten") {
		t.Fatalf("err %v, output %q", err, out.String())
	}
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		b, _ := os.ReadFile(file)
		t.Errorf("history file written again after /forget: %q", b)
	}
	// A failed forget keeps the history.
	err = Run(context.Background(), Config{In: strings.NewReader("kept\r/forget yes\r"), Out: &out, Interactive: true, User: "ann", Handler: h, History: file,
		Forget: func(string) (string, error) { return "", errors.New("no") }})
	if b, _ := os.ReadFile(file); err != nil || !strings.Contains(string(b), "kept") {
		t.Errorf("history after a failed forget: %q, %v", b, err)
	}
}
