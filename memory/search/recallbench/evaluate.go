package recallbench

import (
	"fmt"
	"slices"
	"strings"
)

// Limit is how many hits each ranker gives a question.
const Limit = 10

// Kinds of question, in the report's order (a set's other kinds follow).
var Kinds = []string{"keyword", "inflection", "temporal", "name", "fact", "summary"}

// Outcome is one question's hits from each ranker and the rank (1-based;
// 0: not in the hits) at which each first showed some of its evidence and
// all of it.
type Outcome struct {
	Question          Question
	Mnemo, BM25       []Hit
	MnemoAny, BM25Any int
	MnemoAll, BM25All int
}

// Recall is a ranker's share of questions recalled within the first 5 and
// 10 hits (any evidence), and of the questions with several evidence,
// those with all of it within them.
type Recall struct {
	At5, At10   float64
	All5, All10 float64
}

// Row is the recall of one kind of question (Kind "all": every question).
type Row struct {
	Kind        string
	N, Multi    int // questions, and those with several evidence
	Mnemo, BM25 Recall
}

// Report is a set's recall for both rankers.
type Report struct {
	Name     string
	Rows     []Row
	Outcomes []Outcome
}

// Evaluate asks every question of s of memory/search (on the question's
// day, at most Limit hits) and of the textbook BM25.
func Evaluate(s Set) Report {
	m, t := NewMnemo(s), Textbook(s)
	r := Report{Name: s.Name}
	for _, q := range s.Questions {
		day := s.today(q)
		o := Outcome{Question: q, Mnemo: m.Rank(q.Query, day, Limit), BM25: t.Rank(q.Query, day, Limit)}
		o.MnemoAny, o.MnemoAll = ranks(o.Mnemo, q.Evidence)
		o.BM25Any, o.BM25All = ranks(o.BM25, q.Evidence)
		r.Outcomes = append(r.Outcomes, o)
	}
	kinds := slices.Clone(Kinds)
	for _, q := range s.Questions {
		if !slices.Contains(kinds, q.Kind) {
			kinds = append(kinds, q.Kind)
		}
	}
	for _, k := range append(kinds, "all") {
		var os []Outcome
		for _, o := range r.Outcomes {
			if k == "all" || o.Question.Kind == k {
				os = append(os, o)
			}
		}
		if len(os) == 0 {
			continue
		}
		row := Row{Kind: k, N: len(os)}
		for _, o := range os {
			if len(o.Question.Evidence) > 1 {
				row.Multi++
			}
		}
		row.Mnemo = recall(os, func(o Outcome) (int, int) { return o.MnemoAny, o.MnemoAll })
		row.BM25 = recall(os, func(o Outcome) (int, int) { return o.BM25Any, o.BM25All })
		r.Rows = append(r.Rows, row)
	}
	return r
}

// ranks are the 1-based ranks at which hits first cover some and all of
// ev (0: never).
func ranks(hits []Hit, ev []Evidence) (anyRank, allRank int) {
	found := make([]bool, len(ev))
	left := len(ev)
	for i, h := range hits {
		for j, e := range ev {
			if !found[j] && h.Covers(e) {
				found[j] = true
				left--
				if anyRank == 0 {
					anyRank = i + 1
				}
			}
		}
		if left == 0 {
			return anyRank, i + 1
		}
	}
	return anyRank, 0
}

func recall(os []Outcome, rank func(Outcome) (int, int)) Recall {
	var r Recall
	multi := 0
	within := func(rk, k int) float64 {
		if rk > 0 && rk <= k {
			return 1
		}
		return 0
	}
	for _, o := range os {
		a, all := rank(o)
		r.At5 += within(a, 5)
		r.At10 += within(a, 10)
		if len(o.Question.Evidence) > 1 {
			multi++
			r.All5 += within(all, 5)
			r.All10 += within(all, 10)
		}
	}
	r.At5 /= float64(len(os))
	r.At10 /= float64(len(os))
	if multi > 0 {
		r.All5 /= float64(multi)
		r.All10 /= float64(multi)
	}
	return r
}

// String is the report as a table: per kind, mnemo's and the textbook's
// recall@5 and @10 (any evidence), then, for the questions with several
// evidence, the same with all of it.
func (r Report) String() string {
	var b strings.Builder
	name := r.Name
	if name == "" {
		name = "set"
	}
	fmt.Fprintf(&b, "recall of %s: %d questions\n", name, len(r.Outcomes))
	fmt.Fprintf(&b, "%-12s %4s | %9s %5s | %8s %5s | %5s | %9s %5s | %8s %5s\n",
		"kind", "n", "mnemo R@5", "R@10", "BM25 R@5", "R@10", "multi", "all: mn@5", "@10", "BM25 @5", "@10")
	pct := func(v float64) string { return fmt.Sprintf("%.2f", v) }
	for _, row := range r.Rows {
		multi := [4]string{"-", "-", "-", "-"}
		if row.Multi > 0 {
			multi = [4]string{pct(row.Mnemo.All5), pct(row.Mnemo.All10), pct(row.BM25.All5), pct(row.BM25.All10)}
		}
		fmt.Fprintf(&b, "%-12s %4d | %9s %5s | %8s %5s | %5d | %9s %5s | %8s %5s\n",
			row.Kind, row.N, pct(row.Mnemo.At5), pct(row.Mnemo.At10), pct(row.BM25.At5), pct(row.BM25.At10),
			row.Multi, multi[0], multi[1], multi[2], multi[3])
	}
	return b.String()
}

// Misses lists the questions mnemo does not recall within k hits, or
// recalls later than the textbook does, with each ranker's first rank and
// mnemo's first three hits (their first line of text, from s).
func (r Report) Misses(s Set, k int) string {
	var b strings.Builder
	for _, o := range r.Outcomes {
		missed := o.MnemoAny == 0 || o.MnemoAny > k
		worse := o.BM25Any > 0 && (o.MnemoAny == 0 || o.MnemoAny > o.BM25Any)
		if !missed && !worse {
			continue
		}
		q := o.Question
		fmt.Fprintf(&b, "%s [%s] %q mnemo@%d bm25@%d want", q.ID, q.Kind, q.Query, o.MnemoAny, o.BM25Any)
		for _, e := range q.Evidence {
			fmt.Fprintf(&b, " %s:%d %q", e.Path, e.Line, lineOf(s.Files[e.Path], e.Line))
		}
		b.WriteString("\n")
		for i, h := range o.Mnemo[:min(3, len(o.Mnemo))] {
			fmt.Fprintf(&b, "    %d. %s:%d %q\n", i+1, h.Path, h.Line, lineOf(s.Files[h.Path], h.Line))
		}
	}
	return b.String()
}

// lineOf is text's line n (1-based), or "".
func lineOf(text string, n int) string {
	for i := 1; i < n; i++ {
		j := strings.IndexByte(text, '\n')
		if j < 0 {
			return ""
		}
		text = text[j+1:]
	}
	if j := strings.IndexByte(text, '\n'); j >= 0 {
		text = text[:j]
	}
	return text
}
