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
//	{"op":"done","id":"…","keys":["…"],"at":"…"}
const (
	opAdd  = "add"
	opPost = "post"
	opDone = "done"
)

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
	case opPost, opDone:
	default:
		return record{}, fmt.Errorf("unknown op %q", r.Op)
	}
	return r, nil
}

// doneSet remembers the keys of answered messages for a while, so that a
// redelivery is not answered again: at most max keys, each for ttl, oldest
// dropped first.
type doneSet struct {
	max   int
	ttl   time.Duration
	at    map[string]time.Time
	order []string // insertion order; order[head:] are live
	head  int
}

func newDoneSet(max int, ttl time.Duration) *doneSet {
	return &doneSet{max: max, ttl: ttl, at: map[string]time.Time{}}
}

// add remembers keys as answered at t (a key known already keeps its time).
func (d *doneSet) add(t time.Time, keys ...string) {
	for _, k := range keys {
		if _, ok := d.at[k]; ok || k == "" {
			continue
		}
		if len(d.at) >= d.max {
			d.dropOldest()
		}
		d.at[k] = t
		d.order = append(d.order, k)
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
	for d.head < len(d.order) && now.Sub(d.at[d.order[d.head]]) > d.ttl {
		d.dropOldest()
	}
}

func (d *doneSet) dropOldest() {
	delete(d.at, d.order[d.head])
	d.order[d.head] = ""
	d.head++
	if d.head > len(d.order)/2 && d.head > 64 {
		d.order = append([]string(nil), d.order[d.head:]...)
		d.head = 0
	}
}

// records are the done records that keep the live keys across a rewrite,
// oldest first, one per time (keys answered together stay together).
func (d *doneSet) records(now time.Time) []record {
	d.expire(now)
	var out []record
	for _, k := range d.order[d.head:] {
		t := d.at[k]
		if n := len(out); n > 0 && out[n-1].At.Equal(t) && len(out[n-1].Keys) < maxKeys {
			out[n-1].Keys = append(out[n-1].Keys, k)
			continue
		}
		out = append(out, record{Op: opDone, ID: k, At: t})
	}
	return out
}
