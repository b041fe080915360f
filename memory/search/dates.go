package search

import (
	"strconv"
	"strings"
	"time"
)

// when is what a query says about time: a range of days its entries
// should fall in, and whether it asks for the newest or the oldest.
type when struct {
	from, to int32 // days, inclusive; from == noDate: no range
	recent   bool  // "recently", "last time", "my last …", "latest"
	first    bool  // "first time", "my first …", "earliest", "originally"
}

func (w when) ranged() bool { return w.from != noDate }

var months = map[string]time.Month{
	"january": 1, "jan": 1, "february": 2, "feb": 2, "march": 3, "mar": 3,
	"april": 4, "apr": 4, "may": 5, "june": 6, "jun": 6, "july": 7, "jul": 7,
	"august": 8, "aug": 8, "september": 9, "sep": 9, "sept": 9,
	"october": 10, "oct": 10, "november": 11, "nov": 11, "december": 12, "dec": 12,
}

var weekdays = map[string]time.Weekday{
	"sunday": 0, "monday": 1, "tuesday": 2, "wednesday": 3, "thursday": 4, "friday": 5, "saturday": 6,
}

// seasons start in their month (northern hemisphere) and last three.
var seasons = map[string]time.Month{"spring": 3, "summer": 6, "autumn": 9, "fall": 9, "winter": 12}

// holidays are the days around a yearly date: month, first and last day.
var holidays = map[string][3]int{
	"christmas": {12, 18, 31}, "xmas": {12, 18, 31}, "halloween": {10, 25, 31},
	"thanksgiving": {11, 20, 30}, "valentine": {2, 10, 18}, "valentines": {2, 10, 18},
}

// timeLead are words that make a following "may", "march" or "fall" a
// time rather than a verb.
var timeLead = map[string]bool{"in": true, "of": true, "since": true, "early": true, "late": true, "mid": true, "during": true, "last": true, "this": true, "the": true, "back": true, "until": true, "before": true, "after": true, "around": true}

// ambiguous month and season names are also common words.
var ambiguous = map[string]bool{"may": true, "march": true, "fall": true, "mar": true}

// units of "N units ago", in days.
var agoUnits = map[string]int32{"day": 1, "days": 1, "week": 7, "weeks": 7, "month": 30, "months": 30, "year": 365, "years": 365}

// readWhen takes the time words out of a query's words (lower case) and
// returns the rest and what they said, today being the day of reference.
func readWhen(ws []string, today time.Time) ([]string, when) {
	w := when{from: noDate, to: noDate}
	t := dayOf(today)
	y, m, _ := today.Date()
	used := make([]bool, len(ws))
	at := func(i int) string {
		if i < 0 || i >= len(ws) {
			return ""
		}
		return ws[i]
	}
	setRange := func(from, to int32) {
		if w.from == noDate {
			w.from, w.to = from, to
			return
		}
		w.from, w.to = min(w.from, from), max(w.to, to)
	}
	yearOf := func(s string) (int, bool) {
		if len(s) == 4 {
			if n, err := strconv.Atoi(s); err == nil && n >= 1900 && n <= 2200 {
				return n, true
			}
		}
		return 0, false
	}
	dayNum := func(s string) bool {
		n, err := strconv.Atoi(strings.TrimRight(s, "stndrh"))
		return err == nil && n >= 1 && n <= 31
	}
	// The year the query names, if any: "last year", "this year", "2025".
	year := 0
	for i, s := range ws {
		switch {
		case s == "year" && (at(i-1) == "last" || at(i-1) == "this"):
			year = y
			if at(i-1) == "last" {
				year = y - 1
			}
		default:
			if n, ok := yearOf(s); ok {
				year = n
			}
		}
	}
	// Named months, seasons and holidays take that year; without one, the
	// latest that has begun by today.
	named := false
	span := func(mo time.Month, first, n int, yr int) {
		a := time.Date(yr, mo, first, 0, 0, 0, 0, time.UTC)
		setRange(dayOf(a), dayOf(a.AddDate(0, n, 0))-1)
	}
	latest := func(mo time.Month, firstDay int) int {
		if year != 0 {
			return year
		}
		if mo > m || mo == m && firstDay > today.Day() {
			return y - 1
		}
		return y
	}
	for i, s := range ws {
		prev := at(i - 1)
		if mo, ok := months[s]; ok {
			_, yearNext := yearOf(at(i + 1))
			if !ambiguous[s] || timeLead[prev] || yearNext || dayNum(prev) || dayNum(at(i+1)) {
				span(mo, 1, 1, latest(mo, 1))
				used[i], named = true, true
				continue
			}
		}
		if mo, ok := seasons[s]; ok && (!ambiguous[s] || timeLead[prev]) {
			span(mo, 1, 3, latest(mo, 1)) // winter: the one under way began last December

			used[i], named = true, true
			continue
		}
		if h, ok := holidays[s]; ok {
			a := time.Date(latest(time.Month(h[0]), h[1]), time.Month(h[0]), h[1], 0, 0, 0, 0, time.UTC)
			setRange(dayOf(a), dayOf(a)+int32(h[2]-h[1]))
			used[i], named = true, true
			continue
		}
		if s == "year" && (prev == "new" || prev == "years") {
			yr := latest(12, 28)
			a := time.Date(yr, 12, 28, 0, 0, 0, 0, time.UTC)
			setRange(dayOf(a), dayOf(a)+8)
			used[i], used[i-1], named = true, true, true
		}
	}
	for i, s := range ws {
		if used[i] {
			continue
		}
		prev, next := at(i-1), at(i+1)
		take := func(extra ...int) {
			used[i] = true
			for _, j := range extra {
				used[j] = true
			}
		}
		switch {
		case len(s) == 10 && parseDay(s) != noDate:
			d := parseDay(s)
			setRange(d, d)
			take()
			continue
		case len(s) == 7 && s[4] == '-':
			if a, err := time.Parse("2006-01", s); err == nil {
				span(a.Month(), 1, 1, a.Year())
				take()
				continue
			}
		}
		if n, ok := yearOf(s); ok {
			if !named {
				span(1, 1, 12, n)
			}
			take()
			continue
		}
		if wd, ok := weekdays[s]; ok {
			back := (int(today.Weekday()) - int(wd) + 7) % 7
			if back == 0 {
				back = 7
			}
			setRange(t-int32(back), t-int32(back))
			take()
			continue
		}
		monday := t - int32((int(today.Weekday())+6)%7)
		switch s {
		case "today", "tonight":
			setRange(t, t)
			take()
		case "yesterday":
			setRange(t-1, t-1)
			take()
		case "recently", "lately", "latest", "newest", "recent", "lastly":
			w.recent = true
			take()
		case "earliest", "originally", "oldest", "initially":
			w.first = true
			take()
		case "night":
			if prev == "last" {
				setRange(t-1, t)
				take(i - 1)
			}
		case "weekend":
			if prev == "last" || prev == "this" {
				setRange(monday-2, monday-1)
				if prev == "this" || today.Weekday() == time.Saturday || today.Weekday() == time.Sunday {
					setRange(monday+5, monday+6)
				}
				take(i - 1)
			}
		case "week", "month", "year":
			if prev != "last" && prev != "this" && prev != "past" {
				break
			}
			switch {
			case s == "year":
				if !named {
					if prev == "past" {
						setRange(t-366, t)
					} else {
						span(1, 1, 12, year)
					}
				}
			case s == "week" && prev == "this":
				setRange(monday, t)
			case s == "week" && prev == "last":
				setRange(monday-7, t) // last week's days and this week's so far: people mean either
			case s == "week":
				setRange(t-7, t)
			case prev == "this":
				span(m, 1, 1, y)
			case prev == "last":
				a := time.Date(y, m, 1, 0, 0, 0, 0, time.UTC).AddDate(0, -1, 0)
				span(a.Month(), 1, 1, a.Year())
			default:
				setRange(t-31, t)
			}
			take(i - 1)
		case "time":
			if prev == "last" {
				w.recent = true
				take(i - 1)
			} else if prev == "first" {
				w.first = true
				take(i - 1)
			}
		case "ago":
			// "3 weeks ago", "two months ago", "a couple of weeks ago": around then.
			days, ok := agoUnits[prev]
			if !ok {
				break
			}
			j := i - 2
			if at(j) == "of" {
				j--
			}
			n, ok := number(at(j))
			if !ok {
				n, j = 1, i-1 // "weeks ago"
			}
			c := t - int32(n)*days
			setRange(c-days/2-1, c+days/2+1)
			for k := j; k <= i; k++ {
				used[k] = true
			}
			if at(j-1) == "a" {
				used[j-1] = true
			}
		}
		if used[i] {
			continue
		}
		// "my last on-call week", "when did I last…", "my first lesson":
		// the newest or the oldest.
		if s == "last" && agoUnits[next] == 0 && next != "night" && next != "weekend" {
			w.recent = true
			take()
		} else if s == "first" {
			w.first = true
			take()
		}
	}
	rest := ws[:0:0]
	for i, s := range ws {
		if !used[i] {
			rest = append(rest, s)
		}
	}
	return rest, w
}

// number reads a small count written in digits or words.
func number(s string) (int, bool) {
	if n, err := strconv.Atoi(s); err == nil && n > 0 && n < 1000 {
		return n, true
	}
	n, ok := map[string]int{"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10, "couple": 2, "few": 3, "several": 4}[s]
	return n, ok
}
