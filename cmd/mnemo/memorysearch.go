package main

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/mnemo-agent/mnemo/memory"
)

// checkSearch refuses an empty query or a limit out of range, before
// anything is opened.
func checkSearch(query []string, limit int) error {
	if strings.TrimSpace(strings.Join(query, " ")) == "" {
		return usageError("memory search needs words to look for; usage: mnemo memory search [--json] [--limit N] USER QUERY...")
	}
	if limit < 1 || limit > memory.MaxSearchLimit {
		return usageError("memory search --limit %d is out of range; give 1 to %d", limit, memory.MaxSearchLimit)
	}
	return nil
}

// search prints the entries of name's memory that match query, best
// first: the answer memory_search gives the model over the same files
// (all of them, as in a private conversation), with every hit shown, or
// with --json an array of {path, heading, line, date, text, score}, the
// text whole. It reads the files as they are now and takes no lock, so
// it runs beside a chat or a server.
func (m *memoryCmd) search(name, query string, limit int, asJSON bool) error {
	if _, err := m.user(name); err != nil {
		return err
	}
	mem, done, _ := m.data(false) // without the history: cannot fail
	defer done()
	found, err := mem.Search(name, query, limit)
	if err != nil {
		return err
	}
	if asJSON {
		hits := found.Hits
		if hits == nil {
			hits = []memory.Hit{}
		}
		out, err := json.MarshalIndent(hits, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(m.env.stdout, "%s\n", out)
		return err
	}
	_, err = fmt.Fprintln(m.env.stdout, showable(found.Render(1<<30)))
	return err
}

// why prints the lines of name's memory that match query with where each
// came from (its provenance stamp, in full: an admin sees every source)
// and its history. Like search it takes no lock.
func (m *memoryCmd) why(name, query string) error {
	if _, err := m.user(name); err != nil {
		return err
	}
	mem, done, err := m.data(true)
	if err != nil {
		return err
	}
	defer done()
	out, err := mem.WhyAdmin(name, query)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(m.env.stdout, showable(out))
	return err
}
