// Package recallbench measures how well memory/search finds what a person
// asks about: a generated long memory (a year and a half of dated episode
// entries of one person's work and life, and fact files) with questions
// whose evidence sits in known entries, each question run through
// search.Search and through a textbook BM25 (k1 1.2, b 0.75, no stemming,
// no stop words) over the same units, and recall@5 and recall@10 reported
// per kind of question (keyword, inflection, temporal, name, fact, summary)
// for both. LoadDir reads an external set in the same terms (a held-out
// benchmark converted outside the repository); `make bench-recall` prints
// the report, for the generated set and for each folder named in
// RECALL_DATA.
package recallbench
