package access

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/mnemo-agent/mnemo/agent/defaults"
)

// ToldEvery is how often a refused person is answered at most: the
// messages in between are dropped without a word.
const ToldEvery = time.Hour

// MaxTold bounds the people whose last refusal reply is remembered; past
// it the oldest is forgotten (they may then be answered again within the
// hour), so that a flood of strangers cannot grow the process.
const MaxTold = 10000

// Reasons a refusal is counted under (mnemo_refused_total{reason}).
const ReasonAccess = "access"

// Texts of the refusal replies.
const (
	refusedText = "Sorry, I only talk with the people this bot's operator has let in, and you are not one of them yet. " +
		"Ask the person who runs this bot to run: `mnemo access allow %s`"
	pairingText = "Hello! I don't know you yet. Ask the person who runs this bot to run: `mnemo access approve %s` " +
		"(the code is valid for an hour), then write to me again."
	busyPairingText = "Sorry, I only talk with the people this bot's operator has let in, and too many people are waiting " +
		"for approval now. Ask the person who runs this bot to let you in: `mnemo access allow %s`"
)

// GateOptions configures a Gate. Platform and Policy are required.
type GateOptions struct {
	Platform string // Slack or Discord
	Policy   Policy
	// Store holds the operator's run-time entries and the pairing codes
	// (nil: none; Pairing then refuses like Allowlist).
	Store *Store
	// Refused is called for every message refused (reason ReasonAccess):
	// metrics.Refused. nil: not counted.
	Refused func(platform, reason string)
	Log     *slog.Logger     // nil: discard
	Now     func() time.Time // nil: time.Now
}

// Gate is one platform's check of who may talk, at run time. Safe for
// concurrent use.
type Gate struct {
	o    GateOptions
	log  *slog.Logger
	now  func() time.Time
	told *limiter
}

// NewGate returns the Gate of o.
func NewGate(o GateOptions) *Gate {
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Gate{o: o, log: defaults.Logger(o.Log), now: o.Now, told: newLimiter(MaxTold, ToldEvery)}
}

// Check decides whether who may talk. When not, it counts the refusal
// and returns the reply to give them: who to ask, or their pairing code;
// "" when they were answered within the last hour (nothing to say).
func (g *Gate) Check(ctx context.Context, who Who) (ok bool, reply string) {
	return g.check(ctx, who, false)
}

// CheckCommand is Check for a command (/memory), which is always answered:
// within the hour the reply is said again.
func (g *Gate) CheckCommand(ctx context.Context, who Who) (ok bool, reply string) {
	return g.check(ctx, who, true)
}

func (g *Gate) check(ctx context.Context, who Who, always bool) (bool, string) {
	var extra []Entry
	if g.o.Store != nil {
		extra = g.o.Store.Entries(g.o.Platform)
	}
	d, err := g.o.Policy.Decide(ctx, who, extra)
	if err != nil {
		g.log.Warn(g.o.Platform+": cannot check a user group of the access list; it lets nobody in until it can be read (is usergroups:read granted?)", "error", err)
	}
	if d.Admit {
		return true, ""
	}
	if g.o.Refused != nil {
		g.o.Refused(g.o.Platform, ReasonAccess)
	}
	person := who.Person()
	key := g.o.Platform + ":" + person.String()
	now := g.now()
	if !g.told.take(key, now) && !always {
		g.log.Info(g.o.Platform+": message refused: not let in (told within the hour)", "person", key, "access", string(g.o.Policy.Mode), "why", d.Why)
		return false, ""
	}
	g.log.Info(g.o.Platform+": message refused: not let in", "person", key, "access", string(g.o.Policy.Mode), "why", d.Why)
	if g.o.Policy.Mode != Pairing || g.o.Store == nil {
		return false, fmt.Sprintf(refusedText, key)
	}
	p, err := g.o.Store.Issue(g.o.Platform, person, who.Source(), now)
	switch {
	case errors.Is(err, ErrTooMany), errors.Is(err, ErrTooManyFrom):
		g.log.Warn(g.o.Platform+": no pairing code given: "+err.Error()+"; `mnemo access ls` lists them", "person", key, "source", who.Source())
		return false, fmt.Sprintf(busyPairingText, key)
	case err != nil:
		g.log.Error(g.o.Platform+": cannot keep a pairing code; telling the person to ask the operator instead", "error", err)
		return false, fmt.Sprintf(refusedText, key)
	}
	g.log.Info(g.o.Platform+": pairing code given", "person", key, "expires", p.Expires)
	return false, fmt.Sprintf(pairingText, p.Code)
}
