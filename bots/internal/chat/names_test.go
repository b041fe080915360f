package chat

import (
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"
)

func TestCleanName(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"Alice", "Alice"},
		{"  Alice \t A.\n\nB  ", "Alice A. B"},
		{"line\r\nbreak\u2028sep\u2029para\u0085nel", "line break sep para nel"},
		{"ctl\x00\x07\x1b[31m\x7f", "ctl[31m"},
		{"c1\u0080\u009f", "c1"},
		{"bidi\u202eevil\u202c \u2066iso\u2069 \u200emark\u200f \u061c", "bidievil iso mark"},
		{"zero\u200b\u200c\u200d\u2060\ufeffwidth", "zerowidth"},
		{"tags\U000E0041\U000E007F", "tags"},
		{"fill\u3164\u115f\u1160\uffa0\u2800er \u034f", "filler"},
		{"vs\ufe0f\U000E0100", "vs"},
		{"soft\u00adhyphen", "softhyphen"},
		{"bad\xffutf8", "badutf8"},
		{"\u200b \u200b", ""},
		{"日本語の名前", "日本語の名前"},
		{strings.Repeat("é", 100), strings.Repeat("é", 80)},
		{strings.Repeat("a", 79) + " b", strings.Repeat("a", 79) + " "}, // cut after trimming
	} {
		if got := CleanName(c.in); got != c.want {
			t.Errorf("CleanName(%q) = %q; want %q", c.in, got, c.want)
		}
	}
}

func FuzzCleanName(f *testing.F) {
	for _, s := range []string{"Alice", "a\nb", "\u202eevil", "\U000E0041", strings.Repeat("x ", 100), "\xff", " \u200b "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := CleanName(s)
		if utf8.RuneCountInString(got) > MaxNameRunes || !utf8.ValidString(got) {
			t.Fatalf("CleanName(%q) = %q: too long or invalid", s, got)
		}
		if strings.TrimLeft(got, " ") != got || strings.Contains(got, "  ") ||
			strings.HasSuffix(got, " ") && utf8.RuneCountInString(got) != MaxNameRunes {
			t.Fatalf("CleanName(%q) = %q: untrimmed or double spaces", s, got)
		}
		for _, r := range got {
			if r != ' ' && unicode.IsSpace(r) || invisible(r) || unicode.In(r, unicode.Cc, unicode.Cf) {
				t.Fatalf("CleanName(%q) = %q holds %U", s, got, r)
			}
		}
		if CleanName(got) != strings.TrimRight(got, " ") {
			t.Fatalf("CleanName is not idempotent on %q", s)
		}
	})
}

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

func TestChannelMemory(t *testing.T) {
	for _, c := range []struct{ setting, want, err string }{
		{"", "read", ""},
		{"full", "full", ""},
		{"read", "read", ""},
		{"off", "off", ""},
		{"all", "", `discord.channelMemory is "all"; use full, read or off`},
		{"Full", "", `discord.channelMemory is "Full"; use full, read or off`},
	} {
		got, err := ChannelMemory("discord.channelMemory", c.setting)
		if got != c.want || (err == nil) != (c.err == "") || err != nil && err.Error() != c.err {
			t.Errorf("ChannelMemory(%q) = %q, %v", c.setting, got, err)
		}
	}
	for _, c := range []struct {
		dm            bool
		setting, want string
	}{{true, "off", "full"}, {true, "read", "full"}, {false, "off", "off"}, {false, "read", "read"}, {false, "full", "full"}} {
		if got := TaskMemory(c.dm, c.setting); got != c.want {
			t.Errorf("TaskMemory(%v, %q) = %q", c.dm, c.setting, got)
		}
	}
}
