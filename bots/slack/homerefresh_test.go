package slack

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	slackgo "github.com/slack-go/slack"

	"github.com/mnemo-agent/mnemo/bots/internal/bottest"
)

// publishes records homeTabs' publishes: person and what the tab showed.
type publishes struct {
	mu   sync.Mutex
	at   []string // "user@seconds since start: query"
	fail func(p homePerson) error
	t0   time.Time
}

func (r *publishes) publish(_ context.Context, p homePerson) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.at = append(r.at, p.user+"@"+time.Since(r.t0).Round(time.Millisecond).String()+":"+p.query)
	if r.fail != nil {
		return r.fail(p)
	}
	return nil
}

func (r *publishes) list() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.at, " ")
}

// homeTabs in a bubble: a person's own action publishes at once; changes
// are published at most once every homeEvery, the last one always; a
// 429's Retry-After is waited out, and homeRetries in a row give up; the
// people kept are bounded, and a stop lets nothing more start.
func TestHomeTabs(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  func(h *homeTabs, r *publishes)
		want string
	}{
		{"changes coalesce", func(h *homeTabs, r *publishes) {
			h.person("T1", "U1", "ann", nil) // opened: at once
			synctest.Wait()
			for range 30 {
				h.changed("ann")
				time.Sleep(200 * time.Millisecond)
			}
			h.person("T1", "U1", "ann", func(p *homePerson) { p.query = "ramen" }) // a search: at once
			synctest.Wait()
			h.changed("ann")
			h.changed("bob") // not opened
			time.Sleep(time.Minute)
		}, "U1@0s: U1@5s: U1@6s:ramen U1@11s:ramen"},
		{"rate limited", func(h *homeTabs, r *publishes) {
			n := 0
			r.fail = func(homePerson) error {
				n++
				if n <= 2+homeRetries+1 && n != 2 {
					return &slackgo.RateLimitedError{RetryAfter: 2 * time.Second}
				}
				return nil
			}
			h.person("T1", "U1", "ann", nil) // 429, then after 2 s
			time.Sleep(time.Minute)
			h.changed("ann") // 429 × 4: given up
			time.Sleep(time.Minute)
			h.changed("ann")
			time.Sleep(time.Minute)
		}, "U1@0s: U1@2s: U1@1m0s: U1@1m2s: U1@1m4s: U1@1m6s: U1@2m0s:"},
		{"a zero Retry-After waits a second", func(h *homeTabs, r *publishes) {
			first := true
			r.fail = func(homePerson) error {
				if first {
					first = false
					return &slackgo.RateLimitedError{}
				}
				return nil
			}
			h.person("T1", "U1", "ann", nil)
			time.Sleep(time.Minute)
		}, "U1@0s: U1@1s:"},
		{"bounded", func(h *homeTabs, r *publishes) {
			h.max = 2
			h.person("T1", "U1", "ann", nil)
			time.Sleep(time.Second)
			h.person("T1", "U2", "bob", nil)
			time.Sleep(time.Second)
			h.person("T1", "U1", "ann", nil) // seen again: bob is the oldest
			time.Sleep(time.Second)
			h.person("T1", "U3", "cy", nil) // bob goes
			time.Sleep(time.Minute)
			h.changed("bob")
			h.changed("ann")
			time.Sleep(time.Minute)
			if len(h.people) != 2 || h.people["T1/U2"] != nil {
				panic("kept " + strings.Join(keys(h.people), ","))
			}
		}, "U1@0s: U2@1s: U1@2s: U3@3s: U1@1m3s:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := &publishes{t0: time.Now()}
				logs := &bottest.LogBuffer{}
				h := newHomeTabs(nil, slog.New(slog.NewTextHandler(logs, nil)), r.publish)
				h.changed("ann") // before start: nothing
				ctx, cancel := context.WithCancel(t.Context())
				h.start(ctx)
				tc.run(h, r)
				cancel()
				h.wait()
				h.person("T1", "U1", "ann", nil) // after the stop: nothing
				h.wait()
				if got := r.list(); got != tc.want {
					t.Errorf("publishes %s\nwant      %s", got, tc.want)
				}
				if tc.name == "rate limited" && !strings.Contains(logs.String(), "views.publish is rate limited") {
					t.Errorf("logs %s", logs.String())
				}
			})
		})
	}
}

func keys(m map[string]*homePerson) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// A stop while a publish waits for its timer ends the wait at once.
func TestHomeTabsStopWhileWaiting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &publishes{t0: time.Now()}
		h := newHomeTabs(nil, slog.New(slog.DiscardHandler), r.publish)
		ctx, cancel := context.WithCancel(t.Context())
		h.start(ctx)
		h.person("T1", "U1", "ann", nil)
		synctest.Wait()
		h.changed("ann") // waits homeEvery
		synctest.Wait()
		start := time.Now()
		cancel()
		h.wait()
		if time.Since(start) != 0 || r.list() != "U1@0s:" {
			t.Errorf("stopped after %v; publishes %s", time.Since(start), r.list())
		}
	})
}
