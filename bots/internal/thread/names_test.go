package thread

import (
	"testing"
	"time"
)

func TestNameCache(t *testing.T) {
	now := time.Now()
	type op struct {
		put      bool
		id, name string
		at       time.Duration
		found    bool
	}
	for _, c := range []struct {
		name string
		max  int
		ops  []op
	}{
		{"get and put", 5, []op{
			{id: "a"},
			{put: true, id: "a", name: "A"},
			{id: "a", name: "A", found: true},
			{put: true, id: "u", name: ""}, // an unknown user is kept too
			{id: "u", name: "", found: true},
		}},
		{"ttl", 5, []op{
			{put: true, id: "a", name: "A"},
			{id: "a", name: "A", at: time.Minute, found: true},
			{id: "a", at: time.Minute + time.Second},
			{put: true, id: "a", name: "A2", at: 2 * time.Minute},
			{id: "a", name: "A2", at: 2 * time.Minute, found: true},
		}},
		{"starts over when full", 2, []op{
			{put: true, id: "a", name: "A"},
			{put: true, id: "b", name: "B"},
			{put: true, id: "b", name: "B2"}, // an update does not count
			{id: "a", name: "A", found: true},
			{put: true, id: "c", name: "C"},
			{id: "a"},
			{id: "c", name: "C", found: true},
		}},
		{"max below one", 0, []op{
			{put: true, id: "a", name: "A"},
			{id: "a", name: "A", found: true},
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			nc := NewNameCache(c.max, time.Minute)
			for i, o := range c.ops {
				if o.put {
					nc.Put(o.id, o.name, now.Add(o.at))
					continue
				}
				if name, ok := nc.Get(o.id, now.Add(o.at)); name != o.name || ok != o.found {
					t.Errorf("op %d: Get(%q) = %q, %v; want %q, %v", i, o.id, name, ok, o.name, o.found)
				}
			}
		})
	}
}
