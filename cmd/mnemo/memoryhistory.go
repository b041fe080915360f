package main

import (
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mnemo-agent/mnemo/memory"
)

// history is `mnemo memory history USER [PATH]`: the versions kept of one
// file, or of all the user's (or the channel's) files, newest first, each
// with what changed since the version before it.
func (m *memoryCmd) history(name, p string) error {
	mem, done, err := m.data(true)
	if err != nil {
		return err
	}
	defer done()
	versions, err := mem.History(name, p)
	if err != nil {
		return failure(err)
	}
	if len(versions) == 0 {
		what := name
		if p != "" {
			what = p + " of " + name
		}
		_, err := fmt.Fprintf(m.env.stdout, "no history of %s: nothing was changed through mnemo (or seen changed) since history was kept\n", what)
		return err
	}
	tw := tabwriter.NewWriter(m.env.stdout, 0, 4, 2, ' ', 0)
	head := "ID\tTIME (UTC)\tWHO\tSIZE\tCHANGE"
	if p == "" {
		head = "ID\tTIME (UTC)\tPATH\tWHO\tSIZE\tCHANGE"
	}
	fmt.Fprintln(tw, head)
	for _, c := range versions {
		v, change := c.Version, c.Change
		cols := []string{v.ID, v.Time.Format("2006-01-02 15:04:05"), v.Who, memory.FormatSize(v.Size), change}
		if p == "" {
			cols = []string{v.ID, v.Time.Format("2006-01-02 15:04:05"), v.Path, v.Who, memory.FormatSize(v.Size), change}
		}
		fmt.Fprintln(tw, strings.Join(cols, "\t"))
	}
	return tw.Flush()
}

// restore is `mnemo memory restore USER PATH --at ID|TIME`: the version
// is written back atomically (only over the file as it was just read: a
// write in between makes it fail, nothing overwritten) and recorded as a
// change of its own.
func (m *memoryCmd) restore(name, p, at string) error {
	if strings.TrimSpace(at) == "" {
		return usageError("memory restore needs --at ID or --at TIME (mnemo memory history %s %s lists them); usage: mnemo memory restore USER PATH --at ID|TIME", shellName(name), p)
	}
	h, err := openHistory(m.cfg, time.Now)
	if err != nil {
		return err
	}
	defer h.Close()
	v, err := h.Find(name, p, at)
	if err != nil {
		return failure(err)
	}
	text, err := h.Read(name, p, v)
	if err != nil {
		return failure(err)
	}
	u, err := m.store.User(name)
	if err != nil {
		return failure(err)
	}
	cur, err := u.Version(p)
	if err != nil {
		return failure(err)
	}
	// The text being replaced is kept first, so a restore can be undone.
	if cur.Exists {
		if doc, err := u.Read(p); err == nil && doc.Version.Same(cur) {
			if _, _, err := h.Record(name, p, []byte(doc.Text), "before restore"); err != nil {
				return failure(err)
			}
		}
	}
	// Recorded before the write: a running serve's watcher then finds the
	// text already kept and does not take the restore for a hand edit.
	if _, _, err := h.Record(name, p, text, "restore of "+v.ID); err != nil {
		return failure(fmt.Errorf("the history could not record the restore, so nothing was restored: %w", err))
	}
	if _, err := u.Replace(p, string(text), cur, nil); err != nil {
		// The file was not changed: the history's newest is the file again.
		if doc, rerr := u.Read(p); rerr == nil {
			h.Record(name, p, []byte(doc.Text), "restore failed; as it is")
		}
		if errors.Is(err, memory.ErrConflict) {
			return failure(fmt.Errorf("%s of %s changed while restoring; nothing was overwritten: run the restore again", p, name))
		}
		return failure(err)
	}
	_, err = fmt.Fprintf(m.env.stdout, "restored %s of %s to version %s (%s, %s by %s)\n", p, name, v.ID, memory.FormatSize(v.Size), v.Time.Format("2006-01-02 15:04:05 UTC"), v.Who)
	return err
}
