package turns

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
)

// With one worker the order is fixed: users take turns, each user's
// messages in order; a user without messages gets no turn.
func TestRunUsersTakeTurns(t *testing.T) {
	var got []string
	Run(context.Background(), 1, []int{2, 0, 3, 1}, func(u, m int) bool {
		got = append(got, fmt.Sprintf("u%dm%d", u, m))
		return true
	})
	want := []string{"u0m0", "u2m0", "u3m0", "u0m1", "u2m1", "u2m2"}
	if !slices.Equal(got, want) {
		t.Errorf("turns %v, want %v", got, want)
	}
	Run(context.Background(), 4, []int{0, 0}, func(u, m int) bool {
		t.Errorf("turn %d of user %d without messages", m, u)
		return true
	})
}

// Every message is sent once, each user's in order and one at a time, at
// most workers at once.
func TestRunConcurrent(t *testing.T) {
	const users, messages, workers = 20, 7, 3
	var mu sync.Mutex
	next := make([]int, users)
	busy := make([]bool, users)
	inFlight, most := 0, 0
	Run(context.Background(), workers, slices.Repeat([]int{messages}, users), func(u, m int) bool {
		mu.Lock()
		if busy[u] || m != next[u] {
			t.Errorf("user %d: message %d while busy %v, want message %d", u, m, busy[u], next[u])
		}
		busy[u], next[u] = true, m+1
		inFlight++
		most = max(most, inFlight)
		mu.Unlock()

		mu.Lock()
		busy[u] = false
		inFlight--
		mu.Unlock()
		return true
	})
	for u, n := range next {
		if n != messages {
			t.Errorf("user %d sent %d messages, want %d", u, n, messages)
		}
	}
	if most > workers {
		t.Errorf("%d turns at once, want at most %d", most, workers)
	}
}

// A turn that sees ctx end returns false: its worker stops, the others
// stop at ctx's end, and Run returns with the rest unsent.
func TestRunStopsWhenCtxEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	turns := 0
	Run(ctx, 2, []int{5, 5, 5}, func(u, m int) bool {
		mu.Lock()
		defer mu.Unlock()
		if turns++; turns == 4 {
			cancel()
			return false
		}
		return ctx.Err() == nil
	})
	// The other worker may take one more turn before it sees ctx end.
	if turns != 4 && turns != 5 {
		t.Errorf("%d turns, want 4 or 5", turns)
	}
}
