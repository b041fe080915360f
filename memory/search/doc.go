// Package search finds entries of a person's memory by their words: an
// in-memory inverted index over the units of Markdown memory files (an
// episode's "## " entry with its date, a fact file's lines), ranked with
// BM25 over weighted fields (headings and summary lines count more than
// the body), Snowball stemming, names and compound words kept whole, and
// dates understood in the query ("in March", "last week", "on Tuesday",
// "recently"). It reads no files: the memory package feeds it each file's
// text as the watcher reports changes, and it holds only term postings
// and offsets, never the text. Statistics are counted at query time over
// the units the caller may see, so a channel's scores never depend on a
// private file.
package search
