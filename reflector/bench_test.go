package reflector

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mnemo-agent/mnemo/agent/llm"
	"github.com/mnemo-agent/mnemo/memory/durable"
)

// Benchmarks of the journal and of splitting. make bench summarises them
// in cmd/mnemo-load/README.md (Performance); nothing here asserts a speed.

// idleModel is a model a benchmark never reaches: its runs are not due.
type idleModel struct{}

func (idleModel) Complete(context.Context, llm.Request) (llm.Response, error) {
	return llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: "nothing to remember"}}, nil
}

// benchReflector opens a reflector whose runs are never due while the
// benchmark adds turns (idle an hour, 1,000,000 turns a run), counting the
// fsyncs the journal makes.
func benchReflector(b *testing.B, fsyncs *atomic.Int64) *Reflector {
	b.Helper()
	r, err := Open(Config{Model: idleModel{}, Memory: newFakeMemory(&changes{}), StateDir: b.TempDir(),
		Idle: time.Hour, MaxTurns: 1_000_000, Clock: newClock(),
		Faults: func(op, _ string) error {
			if op == durable.Fsync || op == durable.FsyncDir {
				fsyncs.Add(1)
			}
			return nil
		}})
	if err != nil {
		b.Fatal(err)
	}
	return r
}

// BenchmarkJournalAdd is the turn hand-off as the agent makes it: the time
// from the reply being done to Add returning, and the fsyncs made per turn
// (of one user, and of 100 users taking turns).
func BenchmarkJournalAdd(b *testing.B) {
	for _, users := range []int{1, 100} {
		b.Run(fmt.Sprintf("users=%d", users), func(b *testing.B) {
			var fsyncs atomic.Int64
			r := benchReflector(b, &fsyncs)
			tr := turn("alice", "", strings.Repeat("a message of about a hundred bytes, ", 3))
			names := make([]string, users)
			for i := range names {
				names[i] = fmt.Sprintf("user%d", i)
			}
			b.ResetTimer()
			for i := range b.N {
				tr.User = names[i%users]
				if err := r.Add(tr); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(fsyncs.Load())/float64(b.N), "fsyncs-before-return/turn")
			r.crash()
		})
	}
}

// BenchmarkSplit is the planning of a split (halving a batch too long for
// the model) and the cutting of one turn too long alone.
func BenchmarkSplit(b *testing.B) {
	batch := make([]entry, 20)
	for i := range batch {
		batch[i] = entry{turn: turn("alice", fmt.Sprint(i), "x")}
	}
	long := Turn{User: "alice", UserText: strings.Repeat("é long text ", 2000), ReplyText: strings.Repeat("reply ", 3000),
		Context: make([]ContextMessage, 10)}
	for i := range long.Context {
		long.Context[i] = ContextMessage{Author: "bob", Text: strings.Repeat("context ", 1000)}
	}
	b.Run("plan", func(b *testing.B) {
		for range b.N {
			for n := len(batch); n >= 1; n /= 2 {
				if s := splitFor(batch[:n]); s == nil {
					b.Fatal("no split")
				}
			}
		}
	})
	b.Run("cut", func(b *testing.B) {
		for range b.N {
			if t := cutTurn(long); len(t.UserText) > cutLimit+200 {
				b.Fatal("not cut")
			}
		}
	})
}

// BenchmarkJournalGroupCommit is the flusher's side: turns written, and a
// window's flush every 20 turns (a busy server), per turn; the turns of one
// user share an fsync, those of 100 users mostly do not (one file each).
func BenchmarkJournalGroupCommit(b *testing.B) {
	for _, users := range []int{1, 100} {
		b.Run(fmt.Sprintf("users=%d", users), func(b *testing.B) {
			var fsyncs atomic.Int64
			j := newJournal(b.TempDir(), func(op, _ string) error {
				if op == durable.Fsync {
					fsyncs.Add(1)
				}
				return nil
			})
			tr := turn("alice", "", strings.Repeat("a message of about a hundred bytes, ", 3))
			b.ResetTimer()
			for i := range b.N {
				tr.User = fmt.Sprintf("user%d", i%users)
				if err := j.append(entry{turn: tr}); err != nil {
					b.Fatal(err)
				}
				if i%20 == 19 {
					j.flushAll()
				}
			}
			j.flushAll()
			b.StopTimer()
			b.ReportMetric(float64(fsyncs.Load())/float64(b.N), "fsyncs/turn")
			for u := range users {
				_ = j.release(fmt.Sprintf("user%d", u))
			}
		})
	}
}

// BenchmarkJournalCompaction is the atomic rewrite of a journal holding
// 20 pending turns (a failed run's or a compaction's).
func BenchmarkJournalCompaction(b *testing.B) {
	j := newJournal(b.TempDir(), nil)
	entries := make([]entry, 20)
	for i := range entries {
		entries[i] = entry{turn: turn("alice", fmt.Sprint(i), strings.Repeat("text ", 40))}
	}
	b.ResetTimer()
	for range b.N {
		if err := j.rewrite("alice", entries, nil); err != nil {
			b.Fatal(err)
		}
	}
}
