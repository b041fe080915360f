package search

import (
	"strings"
	"testing"
	"time"
)

// The time words of a query: the range of days they name (on Sunday
// 2026-11-29, or another day given), whether they ask for the newest or
// the oldest, and the words left to search for.
func TestReadWhen(t *testing.T) {
	sun := today
	for _, tc := range []struct {
		query    string
		on       time.Time
		from, to string // "" for no range
		recent   bool
		first    bool
		rest     string
	}{
		{query: "cache key", rest: "cache key"},
		{query: "2026-03-04 deploy", from: "2026-03-04", to: "2026-03-04", rest: "deploy"},
		{query: "2026-02-30", rest: "2026-02-30"},
		{query: "deploy 2026-03", from: "2026-03-01", to: "2026-03-31", rest: "deploy"},
		{query: "2026-13", rest: "2026-13"},
		{query: "in 2025", from: "2025-01-01", to: "2025-12-31", rest: "in"},
		{query: "in March", from: "2026-03-01", to: "2026-03-31", rest: "in"},
		{query: "in december", from: "2025-12-01", to: "2025-12-31", rest: "in"},
		{query: "november", from: "2026-11-01", to: "2026-11-30"},
		{query: "nov", from: "2026-11-01", to: "2026-11-30"},
		{query: "march 2024", from: "2024-03-01", to: "2024-03-31"},
		{query: "8 may", from: "2026-05-01", to: "2026-05-31", rest: "8"},
		{query: "may 8th", from: "2026-05-01", to: "2026-05-31", rest: "8th"},
		{query: "may 32", rest: "may 32"},
		{query: "we may ship", rest: "we may ship"},
		{query: "troops march on", rest: "troops march on"},
		{query: "in June last year", from: "2025-06-01", to: "2025-06-30", rest: "in"},
		{query: "October this year", from: "2026-10-01", to: "2026-10-31"},
		{query: "autumn of 2025", from: "2025-09-01", to: "2025-11-30", rest: "of"},
		{query: "back in the spring", from: "2026-03-01", to: "2026-05-31", rest: "back in the"},
		{query: "in the fall", from: "2026-09-01", to: "2026-11-30", rest: "in the"},
		{query: "they fall over", rest: "they fall over"},
		{query: "winter", from: "2025-12-01", to: "2026-02-28"},
		{query: "winter", on: time.Date(2026, 12, 20, 0, 0, 0, 0, time.UTC), from: "2026-12-01", to: "2027-02-28"},
		{query: "summer", on: time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC), from: "2025-06-01", to: "2025-08-31"},
		{query: "around Christmas", from: "2025-12-18", to: "2025-12-31", rest: "around"},
		{query: "christmas", on: time.Date(2026, 12, 25, 0, 0, 0, 0, time.UTC), from: "2026-12-18", to: "2026-12-31"},
		{query: "christmas", on: time.Date(2026, 12, 10, 0, 0, 0, 0, time.UTC), from: "2025-12-18", to: "2025-12-31"},
		{query: "halloween party", from: "2026-10-25", to: "2026-10-31", rest: "party"},
		{query: "new year", from: "2025-12-28", to: "2026-01-05"},
		{query: "today", from: "2026-11-29", to: "2026-11-29"},
		{query: "tonight", from: "2026-11-29", to: "2026-11-29"},
		{query: "yesterday", from: "2026-11-28", to: "2026-11-28"},
		{query: "last night", from: "2026-11-28", to: "2026-11-29"},
		{query: "on Tuesday", from: "2026-11-24", to: "2026-11-24", rest: "on"},
		{query: "sunday", from: "2026-11-22", to: "2026-11-22"},
		{query: "this week", from: "2026-11-23", to: "2026-11-29"},
		{query: "last week", from: "2026-11-16", to: "2026-11-29"},
		{query: "past week", from: "2026-11-22", to: "2026-11-29"},
		{query: "this month", from: "2026-11-01", to: "2026-11-30"},
		{query: "last month", from: "2026-10-01", to: "2026-10-31"},
		{query: "last month", on: time.Date(2026, 1, 15, 0, 0, 0, 0, time.UTC), from: "2025-12-01", to: "2025-12-31"},
		{query: "past month", from: "2026-10-29", to: "2026-11-29"},
		{query: "this year", from: "2026-01-01", to: "2026-12-31"},
		{query: "last year", from: "2025-01-01", to: "2025-12-31"},
		{query: "past year", from: "2025-11-28", to: "2026-11-29"},
		{query: "last weekend", from: "2026-11-21", to: "2026-11-29"},
		{query: "last weekend", on: time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC), from: "2026-11-21", to: "2026-11-22"},
		{query: "this weekend", on: time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC), from: "2026-11-21", to: "2026-11-29"},
		{query: "3 weeks ago", from: "2026-11-04", to: "2026-11-12"},
		{query: "a couple of weeks ago", from: "2026-11-11", to: "2026-11-19"},
		{query: "two days ago", from: "2026-11-26", to: "2026-11-28"},
		{query: "weeks ago", from: "2026-11-18", to: "2026-11-26"},
		{query: "a year ago", from: "2025-05-30", to: "2026-05-31"},
		{query: "long ago", rest: "long ago"},
		{query: "recently", recent: true},
		{query: "deploy last time", recent: true, rest: "deploy"},
		{query: "when did I last go climbing", recent: true, rest: "when did i go climbing"},
		{query: "my first piano lesson", first: true, rest: "my piano lesson"},
		{query: "the first time", first: true, rest: "the"},
		{query: "originally", first: true},
		{query: "latest", recent: true},
		{query: "1900", from: "1900-01-01", to: "1900-12-31"},
		{query: "2200", from: "2200-01-01", to: "2200-12-31"},
		{query: "1899 2201", rest: "1899 2201"},
		{query: "may 1", from: "2026-05-01", to: "2026-05-31", rest: "1"},
		{query: "31 may", from: "2026-05-01", to: "2026-05-31", rest: "31"},
		{query: "may 0", rest: "may 0"},
		{query: "christmas", on: time.Date(2026, 12, 18, 0, 0, 0, 0, time.UTC), from: "2026-12-18", to: "2026-12-31"},
		{query: "november", on: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), from: "2026-11-01", to: "2026-11-30"},
		{query: "winter 2024", from: "2024-12-01", to: "2025-02-28"},
	} {
		on := tc.on
		if on.IsZero() {
			on = sun
		}
		var ws []string
		words(tc.query, func(w word) { ws = append(ws, strings.ToLower(w.text)) })
		rest, w := readWhen(ws, on)
		from, to := formatDay(w.from), formatDay(w.to)
		if from != tc.from || to != tc.to || w.recent != tc.recent || w.first != tc.first || strings.Join(rest, " ") != tc.rest {
			t.Errorf("%q on %s: %s..%s recent %v first %v rest %q; want %s..%s recent %v first %v rest %q",
				tc.query, on.Format(time.DateOnly), from, to, w.recent, w.first, strings.Join(rest, " "), tc.from, tc.to, tc.recent, tc.first, tc.rest)
		}
	}
}

// A time weighs its entries three times, those near it more than those
// far, undated ones half; recency and age multiply.
func TestTimeFactor(t *testing.T) {
	d := func(s string) int32 { return parseDay(s) }
	march := when{from: d("2026-03-01"), to: d("2026-03-31")}
	now := d("2026-11-29")
	in, near, far, none := timeFactor(march, d("2026-03-15"), now), timeFactor(march, d("2026-04-03"), now), timeFactor(march, d("2025-01-01"), now), timeFactor(march, noDate, now)
	if in != 3 || !(near < in && near > far && far >= 0.5 && near <= 1) || none != 0.5 {
		t.Errorf("in %v near %v far %v undated %v", in, near, far, none)
	}
	if f := timeFactor(when{from: noDate, to: noDate}, d("2026-03-15"), now); f != 1 {
		t.Errorf("no time: %v", f)
	}
	recent := when{from: noDate, to: noDate, recent: true}
	if a, b := timeFactor(recent, d("2026-11-20"), now), timeFactor(recent, d("2026-01-20"), now); !(a > b && b > 1 && a <= 2) {
		t.Errorf("recent: newer %v older %v", a, b)
	}
	first := when{from: noDate, to: noDate, first: true}
	if a, b := timeFactor(first, d("2026-11-20"), now), timeFactor(first, d("2024-01-20"), now); !(b > a && a >= 1 && b < 2) {
		t.Errorf("first: newer %v older %v", a, b)
	}
	if f := timeFactor(recent, noDate, now); f != 1 {
		t.Errorf("recent, undated: %v", f)
	}
}

func TestNumber(t *testing.T) {
	for s, want := range map[string]int{"3": 3, "999": 999, "a": 1, "couple": 2, "several": 4, "ten": 10} {
		if n, ok := number(s); !ok || n != want {
			t.Errorf("%q: %d %v", s, n, ok)
		}
	}
	for _, s := range []string{"0", "1000", "-2", "many", ""} {
		if n, ok := number(s); ok {
			t.Errorf("%q: %d", s, n)
		}
	}
}
