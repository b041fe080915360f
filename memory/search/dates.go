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
	recent   bool  // "recently", "last time", "latest"
	first    bool  // "first time", "earliest", "originally"
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

// monthWords are words that make a following "may", "march" or "fall" a
// time rather than a verb.
var timeLead = map[string]bool{"in": true, "of": true, "since": true, "early": true, "late": true, "mid": true, "during": true, "last": true, "this": true, "the": true, "back": true, "until": true, "before": true, "after": true}

// ambiguous month and season names that are also common words.
var ambiguous = map[string]bool{"may": true, "march": true, "fall": true, "mar": true, "jan": false, "sat": true}

// readWhen takes the time words out of a query's words (lower case) and
// returns the rest and what they said, today being the day of reference.
func readWhen(ws []string, today time.Time) ([]string, when) {
	w := when{from: noDate, to: noDate}
	t := dayOf(today)
	y, m, _ := today.Date()
	rest := ws[:0:0]
	setRange := func(from, to int32) {
		if w.from == noDate || from < w.from {
			w.from = from
		}
		if w.to == noDate || to > w.to {
			w.to = to
		}
	}
	monthRange := func(year int, mo time.Month, n int) {
		a := time.Date(year, mo, 1, 0, 0, 0, 0, time.UTC)
		setRange(dayOf(a), dayOf(a.AddDate(0, n, -1)))
	}
	// latest is the year whose month mo (lasting n months) has begun by today.
	latest := func(mo time.Month) int {
		if mo > m {
			return y - 1
		}
		return y
	}
	yearAt := func(i int) (int, bool) {
		if i < len(ws) && len(ws[i]) == 4 {
			if n, err := strconv.Atoi(ws[i]); err == nil && n >= 1900 && n <= 2200 {
				return n, true
			}
		}
		return 0, false
	}
	dayNum := func(i int) bool {
		if i < 0 || i >= len(ws) {
			return false
		}
		s := strings.TrimRight(ws[i], "stndrh")
		n, err := strconv.Atoi(s)
		return err == nil && n >= 1 && n <= 31
	}
	for i := 0; i < len(ws); i++ {
		s := ws[i]
		prev, next := "", ""
		if i > 0 {
			prev = ws[i-1]
		}
		if i+1 < len(ws) {
			next = ws[i+1]
		}
		switch {
		case len(s) == 10 && parseDay(s) != noDate:
			d := parseDay(s)
			setRange(d, d)
			continue
		case len(s) == 7 && s[4] == '-':
			if a, err := time.Parse("2006-01", s); err == nil {
				monthRange(a.Year(), a.Month(), 1)
				continue
			}
		case len(s) == 4:
			if n, ok := yearAt(i); ok {
				if !(prev != "" && months[prev] != 0) { // "March 2026" takes it with the month
					monthRange(n, 1, 12)
				}
				continue
			}
		}
		if mo, ok := months[s]; ok {
			_, yearNext := yearAt(i + 1)
			if !ambiguous[s] || timeLead[prev] || yearNext || dayNum(i-1) || dayNum(i+1) {
				if yr, ok := yearAt(i + 1); ok {
					monthRange(yr, mo, 1)
				} else {
					monthRange(latest(mo), mo, 1)
				}
				continue
			}
		}
		if mo, ok := seasons[s]; ok && (!ambiguous[s] || timeLead[prev]) {
			start := mo
			yr := y
			if mo == 12 {
				// winter: December to February; the one under way or last.
				if m < 12 {
					yr = y - 1
				}
			} else if mo > m {
				yr = y - 1
			}
			if yr2, ok := yearAt(i + 1); ok {
				yr = yr2
			}
			monthRange(yr, start, 3)
			continue
		}
		if wd, ok := weekdays[s]; ok {
			back := (int(today.Weekday()) - int(wd) + 7) % 7
			if back == 0 {
				back = 7
			}
			setRange(t-int32(back), t-int32(back))
			continue
		}
		switch s {
		case "today":
			setRange(t, t)
			continue
		case "yesterday":
			setRange(t-1, t-1)
			continue
		case "recently", "lately", "latest", "newest", "recent":
			w.recent = true
			continue
		case "earliest", "originally", "oldest":
			w.first = true
			continue
		case "week", "month", "year":
			if prev == "last" || prev == "this" || prev == "past" {
				monday := t - int32((int(today.Weekday())+6)%7)
				switch {
				case s == "week" && prev == "this":
					setRange(monday, t)
				case s == "week" && prev == "last":
					setRange(monday-7, t) // last week's days and this week's so far: what people mean by it varies
				case s == "week":
					setRange(t-7, t)
				case s == "month" && prev == "this":
					monthRange(y, m, 1)
				case s == "month" && prev == "last":
					a := time.Date(y, m, 1, 0, 0, 0, 0, time.UTC).AddDate(0, -1, 0)
					monthRange(a.Year(), a.Month(), 1)
				case s == "month":
					setRange(t-31, t)
				case prev == "this":
					monthRange(y, 1, 12)
				case prev == "last":
					monthRange(y-1, 1, 12)
				default:
					setRange(t-366, t)
				}
				rest = rest[:len(rest)-1] // the "last" or "this"
				continue
			}
		case "time":
			if prev == "last" {
				w.recent = true
				rest = rest[:len(rest)-1]
				continue
			}
			if prev == "first" {
				w.first = true
				rest = rest[:len(rest)-1]
				continue
			}
		case "ago":
			// "3 weeks ago", "two months ago": around then.
			if i >= 2 {
				if n, ok := number(ws[i-2]); ok {
					unit := strings.TrimSuffix(ws[i-1], "s")
					days := map[string]int32{"day": 1, "week": 7, "month": 30, "year": 365}[unit]
					if days > 0 {
						c := t - int32(n)*days
						setRange(c-days/2-1, c+days/2+1)
						rest = rest[:len(rest)-2]
						continue
					}
				}
			}
		}
		_ = next
		rest = append(rest, s)
	}
	return rest, w
}

// number reads a small count written in digits or words.
func number(s string) (int, bool) {
	if n, err := strconv.Atoi(s); err == nil && n > 0 && n < 1000 {
		return n, true
	}
	n, ok := map[string]int{"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10, "couple": 2, "few": 3}[s]
	return n, ok
}
