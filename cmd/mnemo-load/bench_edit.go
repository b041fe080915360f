package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/mnemo-agent/mnemo/memory"
	"github.com/mnemo-agent/mnemo/memory/durable"
)

// editFiles is the size of the memory the edits are made in.
const editFiles = 200

// editWaitMax bounds the wait for one change to show.
const editWaitMax = 10 * time.Second

// editFigures is one kind of change: how long after it is complete (the
// write returned, the command exited) List shows it.
type editFigures struct {
	Kind    string
	Latency Latency // ms
}

// editKind makes change i of its kind in the user folder dir (outside is a
// folder beside it) and returns the path (relative to dir) and size List
// must show.
type editKind struct {
	name string
	make func(dir, outside string, i int) (path string, size int64, err error)
}

var editKinds = []editKind{
	{"in-place write", func(dir, _ string, i int) (string, int64, error) {
		p := "facts/topic-001.md"
		text := topicFacts(1) + strings.Repeat("x", i+1) + "\n"
		f, err := os.OpenFile(filepath.Join(dir, p), os.O_WRONLY|os.O_TRUNC, 0)
		if err != nil {
			return "", 0, err
		}
		if _, err := f.WriteString(text); err != nil {
			f.Close()
			return "", 0, err
		}
		return p, int64(len(text)), f.Close()
	}},
	{"rename", func(dir, _ string, i int) (string, int64, error) {
		from, to := fmt.Sprintf("facts/topic-%03d.md", i+2), fmt.Sprintf("facts/renamed-%03d.md", i)
		st, err := os.Stat(filepath.Join(dir, from))
		if err != nil {
			return "", 0, err
		}
		return to, st.Size(), durable.Dir(dir).Rename(from, to) // as mv does
	}},
	{"sed -i", func(dir, _ string, i int) (string, int64, error) {
		p := "facts/user.md"
		return commandChange(dir, p, "sed", "-i", "s/^- Role: .*/- Role: "+strings.Repeat("r", i+1)+"/", filepath.Join(dir, p))
	}},
	{"cp", func(dir, outside string, i int) (string, int64, error) {
		src := filepath.Join(outside, "cp.md")
		if err := os.WriteFile(src, []byte(topicFacts(900)), 0o600); err != nil {
			return "", 0, err
		}
		p := fmt.Sprintf("facts/copied-%03d.md", i)
		return commandChange(dir, p, "cp", src, filepath.Join(dir, p))
	}},
	{"mv", func(dir, outside string, i int) (string, int64, error) {
		src := filepath.Join(outside, fmt.Sprintf("mv-%03d.md", i))
		if err := os.WriteFile(src, []byte(topicFacts(901)), 0o600); err != nil {
			return "", 0, err
		}
		p := fmt.Sprintf("facts/moved-%03d.md", i)
		return commandChange(dir, p, "mv", src, filepath.Join(dir, p))
	}},
}

// commandChange runs a person's command and returns path and its size
// after it.
func commandChange(dir, path, name string, args ...string) (string, int64, error) {
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		return "", 0, fmt.Errorf("%s: %w: %s", name, err, strings.TrimSpace(string(out)))
	}
	st, err := os.Stat(filepath.Join(dir, path))
	if err != nil {
		return "", 0, err
	}
	return path, st.Size(), nil
}

// editToIndex opens the memory store (with its watcher, as serve and chat
// do) on one user of editFiles files in dir and times, for each kind of
// change, reps changes from complete to shown by List.
func editToIndex(ctx context.Context, dir string, reps int) ([]editFigures, error) {
	mem, outside := filepath.Join(dir, "memory"), filepath.Join(dir, "outside")
	if err := seed(ctx, mem, 1, max(editFiles, reps+3), time.Now()); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(outside, 0o700); err != nil {
		return nil, err
	}
	store, err := memory.Open(memory.Options{Dir: mem, Watch: true})
	if err != nil {
		return nil, err
	}
	defer store.Close()
	u, err := store.User(userName(0))
	if err != nil {
		return nil, err
	}
	if _, err := u.List(); err != nil { // the index is built before anything is timed
		return nil, err
	}
	userDir := filepath.Join(mem, userName(0))
	var out []editFigures
	for _, k := range editKinds {
		var lat []time.Duration
		for i := range reps {
			path, size, err := k.make(userDir, outside, i)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", k.name, err)
			}
			t0 := time.Now()
			if err := waitListed(ctx, u, path, size, editWaitMax); err != nil {
				return nil, fmt.Errorf("%s: %w", k.name, err)
			}
			lat = append(lat, time.Since(t0))
		}
		out = append(out, editFigures{Kind: k.name, Latency: distribution(lat)})
	}
	return out, nil
}

// waitListed polls u's List until it shows path at size.
func waitListed(ctx context.Context, u *memory.User, path string, size int64, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for {
		list, err := u.List()
		if err != nil {
			return err
		}
		for _, f := range list {
			if f.Path == path && f.Size == size {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s (%d bytes) not listed after %v", path, size, wait)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		runtime.Gosched() // the watcher's goroutines run in this process
	}
}
