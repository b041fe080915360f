package intake

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Record operations, one per line:
//
//	{"op":"add","id":"…","keys":["…"],"user":"…","at":"…","data":{…}}
//	{"op":"post","id":"…","text":"…"}
//	{"op":"draft","id":"…","msgs":["…"]}
//	{"op":"done","id":"…","keys":["…"],"at":"…"}
const (
	opAdd  = "add"
	opPost = "post"
	opDone = "done"
)

// opDraft names the platform messages a streamed reply shows so far
// (Journal.Drafted).
const opDraft = "draft"

// maxDrafts bounds the messages a streamed reply names (the adapters
// post at most 5).
const maxDrafts = 16

// maxKeys bounds the dedupe keys of one message (the adapters use 3).
const maxKeys = 8

// record is one journal line.
type record struct {
	Op   string          `json:"op"`
	ID   string          `json:"id"`
	Keys []string        `json:"keys,omitempty"` // dedupe keys besides ID
	User string          `json:"user,omitempty"`
	At   time.Time       `json:"at,omitzero"`
	Data json.RawMessage `json:"data,omitempty"`
	Text string          `json:"text,omitempty"`
	Msgs []string        `json:"msgs,omitempty"`
}

// encode renders r as one line ending in '\n' (JSON escapes every newline
// inside strings). Data was checked by Add, so it cannot fail.
func (r record) encode() []byte {
	b, _ := json.Marshal(r)
	return append(b, '\n')
}

// parseRecord decodes and checks one line (without its '\n').
func parseRecord(line []byte) (record, error) {
	var r record
	if err := json.Unmarshal(line, &r); err != nil {
		return record{}, err
	}
	if r.ID == "" {
		return record{}, errors.New("no id")
	}
	if len(r.Keys) > maxKeys {
		return record{}, fmt.Errorf("%d keys (at most %d)", len(r.Keys), maxKeys)
	}
	switch r.Op {
	case opAdd:
		if len(r.Data) == 0 {
			return record{}, errors.New("an add without data")
		}
	case opDraft:
		if len(r.Msgs) > maxDrafts {
			return record{}, fmt.Errorf("%d draft messages (at most %d)", len(r.Msgs), maxDrafts)
		}
	case opPost, opDone:
	default:
		return record{}, fmt.Errorf("unknown op %q", r.Op)
	}
	return r, nil
}

// doneSet remembers the keys of answered messages for a while, so that a
// redelivery is not answered again: at most max keys, each for ttl, oldest
// dropped first. The keys are kept in a ring in the order they came.
type doneSet struct {
	ttl  time.Duration
	at   map[string]time.Time
	ring []string // ring[head], ring[head+1], … (mod len): the len(at) keys, oldest first
	head int
}

func newDoneSet(max int, ttl time.Duration) *doneSet {
	return &doneSet{ttl: ttl, at: map[string]time.Time{}, ring: make([]string, max)}
}

// add remembers keys as answered at t (a key known already keeps its time).
func (d *doneSet) add(t time.Time, keys ...string) {
	for _, k := range keys {
		if _, ok := d.at[k]; ok || k == "" {
			continue
		}
		if len(d.at) == len(d.ring) {
			d.dropOldest()
		}
		d.ring[(d.head+len(d.at))%len(d.ring)] = k
		d.at[k] = t
	}
}

// has reports whether any of keys is remembered at now.
func (d *doneSet) has(now time.Time, keys ...string) bool {
	d.expire(now)
	for _, k := range keys {
		if _, ok := d.at[k]; ok && k != "" {
			return true
		}
	}
	return false
}

func (d *doneSet) expire(now time.Time) {
	for len(d.at) > 0 && now.Sub(d.at[d.ring[d.head]]) > d.ttl {
		d.dropOldest()
	}
}

func (d *doneSet) dropOldest() {
	delete(d.at, d.ring[d.head])
	d.ring[d.head] = ""
	d.head = (d.head + 1) % len(d.ring)
}

// records are the done records that keep the live keys across a rewrite,
// oldest first, one per key.
func (d *doneSet) records(now time.Time) []record {
	d.expire(now)
	out := make([]record, len(d.at))
	for i := range out {
		k := d.ring[(d.head+i)%len(d.ring)]
		out[i] = record{Op: opDone, ID: k, At: d.at[k]}
	}
	return out
}
