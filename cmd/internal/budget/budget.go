package budget

import (
	"cmp"
	"slices"
	"sync"
	"time"
)

// Limits are the budgets; 0 means none.
type Limits struct {
	MessagesPerMinute int // per person
	TokensPerDay      int // per person, model tokens (prompt + completion) a UTC day
	TotalTokensPerDay int // everyone together, the reflector included
	// ReplyTokens is what Reserve holds for a reply before its cost is
	// known, besides the message's own estimate (the app: maxReplyChars/3).
	ReplyTokens int
}

// Reasons of a refusal, as mnemo_refused_total{reason} names them.
const (
	Rate        = "rate"
	Tokens      = "tokens"
	TotalTokens = "total_tokens"
)

const (
	// MaxPeople bounds the people kept at once (about 100 bytes each).
	MaxPeople = 100_000
	// TellEvery is how often a refused person is told so, per reason: the
	// messages refused between are dropped without a word.
	TellEvery = time.Minute
	// sweepEvery is how often idle people are dropped.
	sweepEvery = time.Minute
)

var reasons = [...]string{Rate, Tokens, TotalTokens}

// person is what is kept of one person.
type person struct {
	tat    time.Time // when the message bucket is full again (GCRA's theoretical arrival time)
	day    time.Time // the UTC day tokens counts
	tokens int
	held   int                     // tokens reserved for answers in progress (Reserve), any day
	told   [len(reasons)]time.Time // last refusal told, per reason
	seen   time.Time
}

// Budget counts what people spend; safe for concurrent use. Create it
// with New.
type Budget struct {
	limits Limits
	now    func() time.Time
	max    int

	mu          sync.Mutex
	people      map[string]*person
	day         time.Time // the UTC day total counts
	total       int
	held        int // everyone's tokens reserved for answers in progress
	sweptAt     time.Time
	interval    time.Duration // minute / MessagesPerMinute
	maxPeopleAt int           // len(people) that triggers dropping the least recently seen (tests lower it)
}

// New returns a Budget with limits l, reading the time from now (nil:
// time.Now).
func New(l Limits, now func() time.Time) *Budget {
	if now == nil {
		now = time.Now
	}
	b := &Budget{limits: l, now: now, people: map[string]*person{}, maxPeopleAt: MaxPeople}
	if l.MessagesPerMinute > 0 {
		b.interval = time.Minute / time.Duration(l.MessagesPerMinute)
	}
	return b
}

// Limits returns the budgets b keeps.
func (b *Budget) Limits() Limits { return b.limits }

// dayOf is the UTC day of t (Truncate counts from the zero time, a UTC
// midnight).
func dayOf(t time.Time) time.Time { return t.UTC().Truncate(24 * time.Hour) }

// Message counts a message of user against messages a minute: reason is
// "" when it is taken, else Rate; tell says to tell the person (the first
// refusal in TellEvery).
func (b *Budget) Message(user string) (reason string, tell bool) {
	if b.limits.MessagesPerMinute <= 0 {
		return "", false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	p := b.person(user, now)
	tat := p.tat
	if tat.Before(now) {
		tat = now
	}
	if tat.Sub(now) > time.Minute-b.interval {
		return Rate, b.tell(p, 0, now)
	}
	p.tat = tat.Add(b.interval)
	return "", false
}

// Reserve says whether user may ask the model now, and when so holds
// Estimate(text) + Limits.ReplyTokens tokens for the answer until Settle:
// reason is "" when yes, TotalTokens when today's tokens of everyone are
// spent or held, Tokens when user's are; tell as for Message. A message is
// taken while what is spent and held today is under the limit, so however
// many arrive at once, at most one answer goes past a limit. held is what
// to give back to Settle (0 when no token limit is set: nothing is held).
func (b *Budget) Reserve(user, text string) (held int, reason string, tell bool) {
	if b.limits.TokensPerDay <= 0 && b.limits.TotalTokensPerDay <= 0 {
		return 0, "", false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	today := dayOf(now)
	p := b.person(user, now)
	if l := b.limits.TotalTokensPerDay; l > 0 && b.totalToday(today)+b.held >= l {
		return 0, TotalTokens, b.tell(p, 2, now)
	}
	if l := b.limits.TokensPerDay; l > 0 && p.today(today)+p.held >= l {
		return 0, Tokens, b.tell(p, 1, now)
	}
	held = Estimate(text) + b.limits.ReplyTokens
	p.held += held
	b.held += held
	return held, "", false
}

// Settle ends a reservation of user: held (Reserve's) is given back and
// tokens, what the answer really cost (0 when it failed before any call),
// charged as Charge does.
func (b *Budget) Settle(user string, held, tokens int) {
	b.mu.Lock()
	// A person dropped meanwhile (MaxPeople) holds nothing any more.
	if p := b.people[user]; p != nil {
		p.held = max(p.held-held, 0)
	}
	b.held = max(b.held-held, 0)
	b.mu.Unlock()
	b.Charge(user, tokens)
}

// today is what p spent on the UTC day today.
func (p *person) today(today time.Time) int {
	if p.day.Equal(today) {
		return p.tokens
	}
	return 0
}

// totalToday is what everyone spent on the UTC day today.
func (b *Budget) totalToday(today time.Time) int {
	if b.day.Equal(today) {
		return b.total
	}
	return 0
}

// Charge adds tokens, what an answer to user or a reflection on user
// cost, to user's and to the total of today.
func (b *Budget) Charge(user string, tokens int) {
	if tokens <= 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	today := dayOf(now)
	b.chargeTotal(today, tokens)
	if b.limits.TokensPerDay > 0 {
		p := b.person(user, now)
		if !p.day.Equal(today) {
			p.day, p.tokens = today, 0
		}
		p.tokens += tokens
	}
}

func (b *Budget) chargeTotal(today time.Time, tokens int) {
	if b.limits.TotalTokensPerDay <= 0 {
		return
	}
	if !b.day.Equal(today) {
		b.day, b.total = today, 0
	}
	b.total += tokens
}

// Spent returns user's tokens and everyone's today (for tests and logs).
func (b *Budget) Spent(user string) (mine, total int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	today := dayOf(b.now())
	if p := b.people[user]; p != nil && p.day.Equal(today) {
		mine = p.tokens
	}
	if b.day.Equal(today) {
		total = b.total
	}
	return mine, total
}

// People is how many people b keeps now.
func (b *Budget) People() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.people)
}

// tell reports whether a refusal for reason i is to be told to p now, and
// notes it.
func (b *Budget) tell(p *person, i int, now time.Time) bool {
	if !p.told[i].IsZero() && now.Sub(p.told[i]) < TellEvery {
		return false
	}
	p.told[i] = now
	return true
}

// person is user's entry, made when missing; idle people are dropped
// first.
func (b *Budget) person(user string, now time.Time) *person {
	b.sweep(now)
	p := b.people[user]
	if p == nil {
		if len(b.people) >= b.maxPeopleAt {
			b.dropLeastRecent()
		}
		p = &person{}
		b.people[user] = p
	}
	p.seen = now
	return p
}

// sweep drops, once every sweepEvery, the people b need not keep: their
// bucket is full, they spent nothing today and were told nothing in the
// last TellEvery.
func (b *Budget) sweep(now time.Time) {
	if now.Sub(b.sweptAt) < sweepEvery && !now.Before(b.sweptAt) {
		return
	}
	b.sweptAt = now
	today := dayOf(now)
	for user, p := range b.people {
		// p.day is set only by a charge of some tokens.
		if p.tat.After(now) || p.held > 0 || p.day.Equal(today) {
			continue
		}
		if slices.ContainsFunc(p.told[:], func(t time.Time) bool { return !t.IsZero() && now.Sub(t) < TellEvery }) {
			continue
		}
		delete(b.people, user)
	}
}

// dropLeastRecent drops the tenth of the people seen longest ago, so that
// a full table is not sorted again at every new person.
func (b *Budget) dropLeastRecent() {
	type seen struct {
		user string
		at   time.Time
	}
	all := make([]seen, 0, len(b.people))
	for u, p := range b.people {
		all = append(all, seen{u, p.seen})
	}
	slices.SortFunc(all, func(x, y seen) int { return cmp.Or(x.at.Compare(y.at), cmp.Compare(x.user, y.user)) })
	for _, s := range all[:max(1, len(all)/10)] {
		delete(b.people, s.user)
	}
}
