package budget

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

// clock is a test clock that moves only when told.
type clock struct{ t time.Time }

func (c *clock) now() time.Time      { return c.t }
func (c *clock) add(d time.Duration) { c.t = c.t.Add(d) }
func newClock(t string) *clock       { tm, _ := time.Parse(time.RFC3339, t); return &clock{tm} }
func outcome(reason string, tell bool) string {
	if reason == "" {
		return "ok"
	}
	if tell {
		return reason + "+tell"
	}
	return reason
}

// step is one call on a Budget: "msg USER", "ask USER" (a Reserve that
// holds nothing), "charge USER N", "total N" (charged to someone else), or
// "wait DURATION"; want is the outcome of
// msg and ask ("ok", "rate+tell", "rate", "tokens+tell", …).
type step struct {
	op   string
	want string
}

func run(t *testing.T, b *Budget, c *clock, steps []step) {
	t.Helper()
	for i, s := range steps {
		var verb, user string
		var n int
		fmt.Sscan(s.op, &verb)
		got := ""
		switch verb {
		case "msg":
			fmt.Sscan(s.op, &verb, &user)
			got = outcome(b.Message(user))
		case "ask":
			fmt.Sscan(s.op, &verb, &user)
			held, reason, tell := b.Reserve(user, "")
			if held != 0 {
				t.Fatalf("step %d: %d held for nothing", i, held)
			}
			got = outcome(reason, tell)
		case "charge":
			fmt.Sscan(s.op, &verb, &user, &n)
			b.Charge(user, n)
		case "total":
			fmt.Sscan(s.op, &verb, &n)
			b.Charge("zed", n) // someone else
		case "wait":
			var d string
			fmt.Sscan(s.op, &verb, &d)
			dur, err := time.ParseDuration(d)
			if err != nil {
				t.Fatal(err)
			}
			c.add(dur)
		default:
			t.Fatalf("bad step %q", s.op)
		}
		if got != s.want {
			t.Fatalf("step %d %q: got %q, want %q", i, s.op, got, s.want)
		}
	}
}

func repeat(n int, s step) []step {
	out := make([]step, n)
	for i := range out {
		out[i] = s
	}
	return out
}

func cat(parts ...[]step) []step {
	var out []step
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func TestBudget(t *testing.T) {
	var steady []step
	for range 100 {
		steady = append(steady, step{"msg ada", "ok"}, step{"wait 10s", ""})
	}
	tests := []struct {
		name   string
		limits Limits
		start  string
		steps  []step
	}{
		{"no limits: everything goes", Limits{}, "2026-11-27T10:00:00Z", cat(
			repeat(1000, step{"msg ada", "ok"}), []step{{"charge ada 1000000000", ""}, {"total 1000000000", ""}, {"ask ada", "ok"}})},
		{"the 4th message in a minute is refused, told once", Limits{MessagesPerMinute: 3}, "2026-11-27T10:00:00Z", cat(
			repeat(3, step{"msg ada", "ok"}),
			[]step{{"msg ada", "rate+tell"}, {"msg ada", "rate"}, {"msg bob", "ok"}, {"wait 19s", ""}, {"msg ada", "rate"},
				{"wait 1s", ""}, {"msg ada", "ok"}, {"msg ada", "rate"},
				{"wait 41s", ""}, {"msg ada", "ok"}, {"msg ada", "ok"}, {"msg ada", "rate+tell"}, {"wait 1m", ""}},
			repeat(3, step{"msg ada", "ok"}), []step{{"msg ada", "rate+tell"}, {"msg ada", "rate"}})},
		{"a steady pace under the limit is never refused", Limits{MessagesPerMinute: 6}, "2026-11-27T10:00:00Z",
			steady},
		{"tokens per person, until the next UTC day", Limits{TokensPerDay: 100}, "2026-11-27T23:00:00Z", []step{
			{"ask ada", "ok"}, {"charge ada 60", ""}, {"ask ada", "ok"}, {"charge ada 60", ""},
			{"ask ada", "tokens+tell"}, {"ask ada", "tokens"}, {"ask bob", "ok"}, {"wait 1m", ""}, {"ask ada", "tokens+tell"},
			{"wait 58m59s", ""}, {"ask ada", "tokens+tell"}, {"ask ada", "tokens"}, {"wait 1s", ""}, {"ask ada", "ok"}}},
		{"the total refuses everyone, the reflector counts", Limits{TokensPerDay: 1000, TotalTokensPerDay: 100}, "2026-11-27T12:00:00Z", []step{
			{"charge ada 50", ""}, {"total 49", ""}, {"ask bob", "ok"}, {"total 1", ""},
			{"ask bob", "total_tokens+tell"}, {"ask ada", "total_tokens+tell"}, {"ask bob", "total_tokens"},
			{"wait 12h", ""}, {"ask bob", "ok"}, {"ask ada", "ok"}}},
		{"the total alone", Limits{TotalTokensPerDay: 10}, "2026-11-27T12:00:00Z", []step{
			{"charge ada 10", ""}, {"ask carol", "total_tokens+tell"}, {"wait 24h", ""}, {"ask carol", "ok"}}},
		{"nothing charged for nothing", Limits{TokensPerDay: 1}, "2026-11-27T12:00:00Z", []step{
			{"charge ada 0", ""}, {"charge ada -5", ""}, {"total 5", ""}, {"ask ada", "ok"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newClock(tt.start)
			b := New(tt.limits, c.now)
			run(t, b, c, tt.steps)
		})
	}
}

func TestSpentAndDays(t *testing.T) {
	c := newClock("2026-11-27T23:59:59Z")
	b := New(Limits{TokensPerDay: 100, TotalTokensPerDay: 1000}, c.now)
	b.Charge("ada", 30)
	b.Charge("zed", 5)
	if mine, total := b.Spent("ada"); mine != 30 || total != 35 {
		t.Fatalf("Spent = %d, %d", mine, total)
	}
	if mine, _ := b.Spent("bob"); mine != 0 {
		t.Fatalf("bob spent %d", mine)
	}
	c.add(time.Second) // 00:00 UTC
	if mine, total := b.Spent("ada"); mine != 0 || total != 0 {
		t.Fatalf("the next day: Spent = %d, %d", mine, total)
	}
	b.Charge("ada", 7)
	if mine, total := b.Spent("ada"); mine != 7 || total != 7 {
		t.Fatalf("the next day, after a charge: Spent = %d, %d", mine, total)
	}
	// A local-time clock counts UTC days too.
	c.t = time.Date(2026, 11, 28, 20, 0, 0, 0, time.FixedZone("UTC-5", -5*3600)) // 01:00 UTC on the 29th
	if mine, _ := b.Spent("ada"); mine != 0 {
		t.Fatalf("a later UTC day: %d", mine)
	}
	if got := b.Limits(); got != (Limits{TokensPerDay: 100, TotalTokensPerDay: 1000}) {
		t.Fatalf("Limits = %+v", got)
	}
	if New(Limits{}, nil).now == nil {
		t.Fatal("no clock")
	}
}

// People who are idle are dropped at the next sweep; those who spent
// tokens today, whose bucket is not full or who were told a minute ago are
// kept: memory follows the people active now, not everyone ever seen.
func TestSweepBoundsMemory(t *testing.T) {
	c := newClock("2026-11-27T10:00:00Z")
	b := New(Limits{MessagesPerMinute: 1, TokensPerDay: 10}, c.now)
	for i := range 1000 {
		b.Message(fmt.Sprint("stranger", i))
	}
	b.Charge("spender", 5)
	b.Message("told")
	b.Message("told") // refused and told
	if n := b.People(); n != 1002 {
		t.Fatalf("%d people", n)
	}
	c.add(time.Minute)
	b.Message("newcomer")        // sweeps
	if n := b.People(); n != 2 { // spender and newcomer; "told" was told exactly a minute ago
		t.Fatalf("after a minute: %d people", n)
	}
	c.add(24 * time.Hour)
	b.Message("next")
	if n := b.People(); n != 1 {
		t.Fatalf("the next day: %d people", n)
	}
	// A clock set back sweeps too.
	c.add(-time.Hour)
	b.Message("back")
	if n := b.People(); n != 2 {
		t.Fatalf("after the clock went back: %d people", n)
	}
}

// Past the cap, the least recently seen go first, a tenth at a time.
func TestMaxPeople(t *testing.T) {
	c := newClock("2026-11-27T10:00:00Z")
	b := New(Limits{TokensPerDay: 10}, c.now)
	b.maxPeopleAt = 20
	for i := range 20 {
		b.Charge(fmt.Sprint("p", i), 1)
		c.add(time.Millisecond)
	}
	b.Charge("p0", 1) // seen again: now the most recent
	b.Charge("late", 1)
	if n := b.People(); n != 19 {
		t.Fatalf("%d people", n)
	}
	if mine, _ := b.Spent("p1"); mine != 0 {
		t.Errorf("p1, the least recently seen, is kept: %d", mine)
	}
	if mine, _ := b.Spent("p0"); mine != 2 {
		t.Errorf("p0, seen again, was dropped: %d", mine)
	}
	b.maxPeopleAt = 1
	b.people = map[string]*person{}
	b.Charge("a", 1)
	b.Charge("b", 1) // one drops at least one
	if n := b.People(); n != 1 {
		t.Fatalf("%d people", n)
	}
}

// One Budget is shared by every platform's goroutines.
func TestConcurrent(t *testing.T) {
	b := New(Limits{MessagesPerMinute: 1000, TokensPerDay: 1 << 30, TotalTokensPerDay: 1 << 30}, nil)
	done := make(chan struct{})
	for g := range 8 {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := range 200 {
				u := fmt.Sprint("u", g, i%5)
				b.Message(u)
				held, _, _ := b.Reserve(u, "four")
				b.Settle(u, held, 1)
				b.Charge("zed", 1)
			}
		}()
	}
	for range 8 {
		<-done
	}
	if _, total := b.Spent(""); total != 3200 {
		t.Fatalf("total %d", total)
	}
}

// A person told of a refusal less than a minute ago is kept, so that they
// are not told again at once.
func TestSweepKeepsTheRecentlyTold(t *testing.T) {
	c := newClock("2026-11-27T10:00:00Z")
	b := New(Limits{TotalTokensPerDay: 1}, c.now)
	b.Charge("zed", 1)
	run(t, b, c, []step{{"ask y", "total_tokens+tell"}, {"wait 30s", ""}, {"ask x", "total_tokens+tell"}, {"wait 30s", ""},
		{"ask z", "total_tokens+tell"}, {"ask x", "total_tokens"}})
	if n := b.People(); n != 2 { // y was dropped, x kept
		t.Fatalf("%d people", n)
	}
}

// A limit is reached when exactly spent: the next ask is refused (not
// one answer later); one token short, it is taken. Limits of 0 keep
// nothing and refuse nothing.
func TestLimitsAtTheirBoundary(t *testing.T) {
	c := newClock("2026-11-27T10:00:00Z")
	b := New(Limits{TokensPerDay: 100, TotalTokensPerDay: 1000}, c.now)
	b.Charge("ada", 99)
	if r := ask(b, "ada"); r != "" {
		t.Fatalf("99 of 100 spent: %q", r)
	}
	b.Charge("ada", 1)
	if r := ask(b, "ada"); r != Tokens {
		t.Fatalf("100 of 100 spent: %q, want %q", r, Tokens)
	}
	b = New(Limits{TotalTokensPerDay: 100}, c.now)
	b.Charge("zed", 99)
	if r := ask(b, "ada"); r != "" {
		t.Fatalf("99 of 100 in all: %q", r)
	}
	b.Charge("zed", 1)
	if r := ask(b, "bob"); r != TotalTokens {
		t.Fatalf("100 of 100 in all: %q, want %q", r, TotalTokens)
	}
	b = New(Limits{}, c.now)
	for range 100 {
		if r, _ := b.Message("ada"); r != "" {
			t.Fatalf("no limits, refused: %q", r)
		}
		b.Charge("ada", 1000)
		b.Charge("zed", 1000)
	}
	if mine, total := b.Spent("ada"); mine != 0 || total != 0 || b.People() != 0 {
		t.Fatalf("no limits: spent %d/%d, %d people kept", mine, total, b.People())
	}
	// Without a total limit the total is not kept; without a limit per
	// person, nobody is.
	b = New(Limits{TokensPerDay: 100}, c.now)
	b.Charge("ada", 5)
	if mine, total := b.Spent("ada"); mine != 5 || total != 0 {
		t.Fatalf("no total limit: spent %d/%d", mine, total)
	}
	b = New(Limits{TotalTokensPerDay: 100}, c.now)
	b.Charge("ada", 5)
	if mine, total := b.Spent("ada"); mine != 0 || total != 5 || b.People() != 0 {
		t.Fatalf("no limit per person: spent %d/%d, %d people", mine, total, b.People())
	}
	// Charging nothing keeps nobody: a person who spent nothing today is
	// swept.
	b = New(Limits{TokensPerDay: 100, TotalTokensPerDay: 100}, c.now)
	b.Charge("ada", 0)
	b.Charge("zed", 0)
	if b.People() != 0 {
		t.Fatalf("charging 0 kept %d people", b.People())
	}
	ask(b, "ada")
	if mine, total := b.Spent("ada"); mine != 0 || total != 0 {
		t.Fatalf("spent %d/%d after charging 0", mine, total)
	}
}

// ask is Reserve's reason for a message of no text, its hold given back
// at once.
func ask(b *Budget, user string) string {
	held, reason, _ := b.Reserve(user, "")
	b.Settle(user, held, 0)
	return reason
}

// A reservation holds the message's estimate and the reply's tokens until
// it is settled: what is held counts against the limits like what is
// spent, per person and in all, so a second message while the first is
// answered is refused once the two together reach a limit.
func TestReserveAndSettle(t *testing.T) {
	type hold struct {
		user, text string
		want       string // outcome
		held       int
	}
	tests := []struct {
		name   string
		limits Limits
		// before: spent by ada and by zed before the holds.
		ada, zed int
		holds    []hold
	}{
		{"a hold is the text's estimate and the reply's", Limits{TokensPerDay: 1000, ReplyTokens: 100}, 0, 0,
			[]hold{{"ada", "1234567", "ok", 103}, {"ada", "", "ok", 100}}},
		{"held reaches the limit: the next is refused", Limits{TokensPerDay: 200, ReplyTokens: 100}, 0, 0,
			[]hold{{"ada", "", "ok", 100}, {"ada", "", "ok", 100}, {"ada", "", "tokens+tell", 0}, {"bob", "", "ok", 100}}},
		{"spent and held together, one short of the limit", Limits{TokensPerDay: 200, ReplyTokens: 100}, 99, 0,
			[]hold{{"ada", "", "ok", 100}, {"ada", "", "ok", 100}, {"ada", "", "tokens+tell", 0}}},
		{"spent and held together at the limit", Limits{TokensPerDay: 200, ReplyTokens: 100}, 100, 0,
			[]hold{{"ada", "", "ok", 100}, {"ada", "", "tokens+tell", 0}}},
		{"spent alone at the limit", Limits{TokensPerDay: 99, ReplyTokens: 1}, 99, 0,
			[]hold{{"ada", "", "tokens+tell", 0}}},
		{"one under the limit is taken whatever its size", Limits{TokensPerDay: 20, ReplyTokens: 5000}, 19, 0,
			[]hold{{"ada", "", "ok", 5000}, {"ada", "", "tokens+tell", 0}, {"ada", "", "tokens", 0}}},
		{"the total counts everyone's holds", Limits{TotalTokensPerDay: 300, ReplyTokens: 100}, 0, 50,
			[]hold{{"ada", "", "ok", 100}, {"bob", "", "ok", 100}, {"carol", "", "ok", 100}, {"dan", "", "total_tokens+tell", 0}}},
		{"the total at its boundary", Limits{TotalTokensPerDay: 150, ReplyTokens: 100}, 0, 50,
			[]hold{{"ada", "", "ok", 100}, {"bob", "", "total_tokens+tell", 0}}},
		{"the total one short", Limits{TotalTokensPerDay: 151, ReplyTokens: 100}, 0, 50,
			[]hold{{"ada", "", "ok", 100}, {"bob", "", "ok", 100}, {"carol", "", "total_tokens+tell", 0}}},
		{"no token limits hold nothing", Limits{MessagesPerMinute: 5, ReplyTokens: 100}, 0, 0,
			[]hold{{"ada", "some text", "ok", 0}, {"ada", "", "ok", 0}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newClock("2026-11-27T10:00:00Z")
			b := New(tt.limits, c.now)
			b.Charge("ada", tt.ada)
			b.Charge("zed", tt.zed)
			sum := 0
			for i, h := range tt.holds {
				held, reason, tell := b.Reserve(h.user, h.text)
				if got := outcome(reason, tell); got != h.want || held != h.held {
					t.Fatalf("hold %d (%s): %s holding %d, want %s holding %d", i, h.user, got, held, h.want, h.held)
				}
				sum += held
			}
			if b.held != sum {
				t.Fatalf("held in all %d, want %d", b.held, sum)
			}
		})
	}
}

// Settling gives the hold back and charges what the answer cost; a
// failed answer (0 tokens) only gives it back. A person holding tokens is
// kept past the sweep, over a day's change too; a person dropped at the
// cap while holding is settled without going below nothing.
func TestSettle(t *testing.T) {
	c := newClock("2026-11-27T23:59:00Z")
	b := New(Limits{TokensPerDay: 300, TotalTokensPerDay: 1000, ReplyTokens: 100}, c.now)
	h1, _, _ := b.Reserve("ada", "")
	h2, _, _ := b.Reserve("ada", "")
	if r := ask(b, "ada"); r != "" {
		t.Fatalf("200 of 300 held: %q", r)
	}
	b.Settle("ada", h1, 0) // failed: given back, nothing spent
	if mine, total := b.Spent("ada"); mine != 0 || total != 0 || b.held != 100 || b.people["ada"].held != 100 {
		t.Fatalf("after a failure: spent %d/%d, held %d/%d", mine, total, b.people["ada"].held, b.held)
	}
	c.add(2 * time.Minute) // the next UTC day, past a sweep
	b.Message("bob")       // sweeps
	if b.People() != 1 || b.people["ada"] == nil {
		t.Fatalf("a person holding tokens was swept: %d people", b.People())
	}
	b.Settle("ada", h2, 250)
	if mine, total := b.Spent("ada"); mine != 250 || total != 250 || b.held != 0 || b.people["ada"].held != 0 {
		t.Fatalf("after the answer: spent %d/%d, held %d/%d", mine, total, b.people["ada"].held, b.held)
	}
	if r := ask(b, "ada"); r != "" {
		t.Fatalf("250 of 300 spent: %q", r)
	}
	h3, _, _ := b.Reserve("ada", "")
	if r := ask(b, "ada"); r != Tokens {
		t.Fatalf("250 spent and 100 held of 300: %q", r)
	}
	delete(b.people, "ada") // dropped at the cap meanwhile
	h4, _, _ := b.Reserve("bob", "")
	b.Settle("ada", h3, 10)
	if b.held != h4 || b.people["ada"].held != 0 {
		t.Fatalf("settling a dropped person: held %d (bob's %d), ada %d", b.held, h4, b.people["ada"].held)
	}
	b.Settle("bob", h4+50, 0) // more than held: nothing goes below 0
	if b.held != 0 || b.people["bob"].held != 0 {
		t.Fatalf("held %d, bob %d", b.held, b.people["bob"].held)
	}
}

// A burst: n messages ask at the same moment, none settled yet. With a
// limit of 20 tokens a day and the reply's 100 held, only the first is
// taken; with room for three holds, exactly three.
func TestBurstTakesAtMostOnePastTheLimit(t *testing.T) {
	tests := []struct {
		name   string
		limits Limits
		want   int
	}{
		{"per person", Limits{TokensPerDay: 20, ReplyTokens: 100}, 1},
		{"per person, room for three", Limits{TokensPerDay: 300, ReplyTokens: 100}, 3},
		{"in all", Limits{TotalTokensPerDay: 20, ReplyTokens: 100}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := New(tt.limits, nil)
			const n = 16
			start := make(chan struct{})
			taken := make(chan int, n)
			var wg sync.WaitGroup
			for range n {
				wg.Go(func() {
					<-start
					held, reason, _ := b.Reserve("ada", "hello")
					if reason == "" {
						taken <- held
					}
				})
			}
			close(start)
			wg.Wait()
			close(taken)
			got := 0
			for held := range taken {
				got++
				b.Settle("ada", held, 150)
			}
			if got != tt.want {
				t.Fatalf("%d of %d taken, want %d", got, n, tt.want)
			}
			if b.held != 0 {
				t.Fatalf("%d still held", b.held)
			}
			if r := ask(b, "ada"); r == "" {
				t.Fatal("after the burst, still taken")
			}
		})
	}
}
