package durable

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// A Pending write streams into a temp file and becomes the file only at
// Commit, through the same steps as WriteFile; before that the old file
// is what a reader sees.
func TestPending(t *testing.T) {
	dir := t.TempDir()
	put(t, filepath.Join(dir, "a.tar.gz"), "old")
	r := &recorder{}
	p, err := NewPending(Dir(dir), "a.tar.gz", WriteOptions{Hook: r.hook, Perm: 0o600})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Cleanup()
	for _, part := range []string{"one ", "two"} {
		if _, err := p.Write([]byte(part)); err != nil {
			t.Fatal(err)
		}
	}
	if got := read(t, filepath.Join(dir, "a.tar.gz")); got != "old" {
		t.Fatalf("before Commit the file is %q; want the old one", got)
	}
	if err := p.Commit(); err != nil {
		t.Fatal(err)
	}
	p.Cleanup() // after a Commit: leaves the file
	if got := read(t, filepath.Join(dir, "a.tar.gz")); got != "one two" {
		t.Errorf("after Commit the file is %q", got)
	}
	if fi, _ := os.Stat(filepath.Join(dir, "a.tar.gz")); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v; want 0600", fi.Mode().Perm())
	}
	if left := temps(t, dir); len(left) != 0 {
		t.Errorf("temp files left: %v", left)
	}
	var ops []string
	for _, o := range r.ops {
		op, _, _ := strings.Cut(o, ":")
		ops = append(ops, op)
	}
	want := []string{Create, Write, Write, Write, Fsync, Rename, FsyncDir}
	if !slices.Equal(ops, want) {
		t.Errorf("operations %v; want %v", ops, want)
	}
}

// A failure at any step, or a Check that refuses, leaves the old file
// and no temp file, and names the file.
func TestPendingFailures(t *testing.T) {
	check := errors.New("the target changed")
	for _, tc := range []struct {
		op       string
		check    error
		noDirSyn bool
	}{
		{op: Create}, {op: Write}, {op: Fsync}, {op: Rename}, {op: FsyncDir}, {check: check},
	} {
		t.Run(tc.op+"/"+errString(tc.check), func(t *testing.T) {
			dir := t.TempDir()
			target := filepath.Join(dir, "a.tar.gz")
			put(t, target, "old")
			r := &recorder{op: tc.op, err: syscall.ENOSPC}
			o := WriteOptions{Hook: r.hook}
			if tc.check != nil {
				o.Check = func() error { return tc.check }
			}
			err := func() error {
				p, err := NewPending(Dir(dir), "a.tar.gz", o)
				if err != nil {
					return err
				}
				defer p.Cleanup()
				if _, err := p.Write([]byte("new")); err != nil {
					return err
				}
				return p.Commit()
			}()
			switch {
			case tc.check != nil:
				if !errors.Is(err, check) {
					t.Fatalf("err = %v; want the Check's", err)
				}
			default:
				var de *Error
				if !errors.As(err, &de) || !errors.Is(err, syscall.ENOSPC) || de.Op != tc.op {
					t.Fatalf("err = %v; want the %s failure as an *Error", err, tc.op)
				}
			}
			want := "old"
			if tc.op == FsyncDir { // the rename had happened: the new file is in place
				want = "new"
			}
			if got := read(t, target); got != want {
				t.Errorf("file = %q; want %q", got, want)
			}
			if left := temps(t, dir); len(left) != 0 {
				t.Errorf("temp files left: %v", left)
			}
		})
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return "check"
}

// NoSync skips both fsyncs (a cache); NoDirSync the folder's only.
func TestPendingNoSync(t *testing.T) {
	for _, tc := range []struct {
		o    WriteOptions
		want []string
	}{
		{WriteOptions{NoSync: true}, []string{Create, Write, Write, Rename}},
		{WriteOptions{NoDirSync: true}, []string{Create, Write, Write, Fsync, Rename}},
	} {
		dir := t.TempDir()
		r := &recorder{}
		tc.o.Hook = r.hook
		p, err := NewPending(Dir(dir), "c", tc.o)
		if err != nil {
			t.Fatal(err)
		}
		p.Write([]byte("x"))
		if err := p.Commit(); err != nil {
			t.Fatal(err)
		}
		var ops []string
		for _, o := range r.ops {
			op, _, _ := strings.Cut(o, ":")
			ops = append(ops, op)
		}
		if !slices.Equal(ops, tc.want) {
			t.Errorf("%+v: operations %v; want %v", tc.o, ops, tc.want)
		}
	}
}
