package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"time"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/agent/defaults"
	"github.com/mnemo-agent/mnemo/bots/platform"
	"github.com/mnemo-agent/mnemo/cmd/internal/userdata"
	"github.com/mnemo-agent/mnemo/memory"
	memhistory "github.com/mnemo-agent/mnemo/memory/history"
)

// ForgetWait bounds a forget: how long it waits for a running reflection
// of the person, on every surface. The CLI waits a little longer for a
// running process's answer.
const ForgetWait = 30 * time.Second

// Asker is what every surface asks of mnemo about what it remembers: the
// chat platforms' /memory, the terminal chat's (its own and a second chat
// through the owner), the control socket and the admin commands. *Memory
// satisfies it, running or offline.
type Asker interface {
	// Show is /memory in Slack and Discord (userdata.Service.Show).
	Show(user, channel string) (string, error)
	// ShowChat is /memory in the terminal chat (userdata.Service.ShowChat).
	ShowChat(user string) (string, error)
	// CheckPath says whether p is a memory file name.
	CheckPath(p string) error
	// SetShared marks one of a person's files shared with channels or
	// private; a missing file is an error wrapping fs.ErrNotExist.
	SetShared(user, path string, shared bool) (changed bool, err error)
	// Forget is the one forget: every holder of the owner's state.
	Forget(ctx context.Context, r userdata.Request) (Forgotten, error)
	// Why is /memory why (userdata.Service.Why).
	Why(user, channel, query string, inChannel bool) (string, error)
	// Home and SearchHome are a person's home surface (home.go).
	Home(user string) (platform.Home, error)
	SearchHome(user, query string, limit int) ([]platform.HomeHit, error)
}

var _ Asker = (*Memory)(nil)

// Memory is the use cases on what is kept of people and channels: shown,
// shared or private, searched, exported, its history listed, forgotten.
// A running process's (Open: the holders live) and an admin command's
// (Offline: the holders read their files) are the same code.
type Memory struct {
	store    *memory.Store
	hist     *memhistory.Store // nil: not opened
	changes  *changeLog        // nil offline: nothing records who changed what
	stateDir string
	log      *slog.Logger
	svc      *userdata.Service
}

// Offline is Memory over a data folder no chat or serve runs on (the
// admin commands): store opened without the watcher, hist nil when the
// history is not needed. A nil log discards.
func Offline(stateDir string, store *memory.Store, hist *memhistory.Store, journals []userdata.Journal, log *slog.Logger) *Memory {
	m := &Memory{store: store, hist: hist, stateDir: stateDir, log: defaults.Logger(log)}
	m.svc = userdata.New(userdata.Wiring{StateDir: stateDir, Store: store, History: hist, Journals: journals}, log)
	return m
}

// Holders are the forget's holders, in the order it runs them.
func (m *Memory) Holders() []userdata.Holder { return m.svc.Holders() }

// Show is what `/memory` answers in Slack and Discord.
func (m *Memory) Show(user, channel string) (string, error) { return m.svc.Show(user, channel) }

// Why is /memory why: the lines of user's memory matching query, with
// their sources and history; in a channel only what it may see, sources
// outside it unnamed.
func (m *Memory) Why(user, channel, query string, inChannel bool) (string, error) {
	return m.svc.Why(userdata.WhyScope{Owner: user, Channel: channel, InChannel: inChannel}, query)
}

// WhyAdmin is `mnemo memory why`: every file of owner (a person or a
// channel's memory), every source in full.
func (m *Memory) WhyAdmin(owner, query string) (string, error) {
	return m.svc.Why(userdata.WhyScope{Owner: owner}, query)
}

// ShowChat is /memory in the terminal chat.
func (m *Memory) ShowChat(user string) (string, error) { return m.svc.ShowChat(user) }

// Read is the whole text of owner's memory file p (`mnemo memory show`).
func (m *Memory) Read(owner, p string) (string, error) { return m.svc.Read(owner, p) }

// Export writes owner's memory files to w as a tar.gz archive.
func (m *Memory) Export(owner string, w io.Writer) (memory.ExportReport, error) {
	return m.svc.Export(owner, w)
}

// History is the versions kept of owner's file p (all for ""), newest
// first, each with what changed.
func (m *Memory) History(owner, p string) ([]userdata.Change, error) { return m.svc.History(owner, p) }

// Search is the entries of owner's memory that match query, best first:
// the answer memory_search gives the model over the same files (all of
// them, as in a private conversation).
func (m *Memory) Search(owner, query string, limit int) (memory.Found, error) {
	return m.store.Search(owner, query, limit)
}

// CheckPath says whether p is a memory file name (facts/<name>.md or
// episodes/YYYY-MM.md).
func (m *Memory) CheckPath(p string) error {
	_, err := memory.ParsePath(p)
	return err
}

// SetShared marks one of user's memory files shared with channels or
// private (/memory share, /memory private in Slack, Discord and the
// chat). user is a person, as the platform names them: a channel's files
// are an admin's to change. The change is a write of the store: the
// metrics count it and the history keeps it under the person's name. A
// missing file is an error wrapping fs.ErrNotExist.
func (m *Memory) SetShared(user, path string, shared bool) (changed bool, err error) {
	u, err := m.store.User(user)
	if err == nil && mnemo.IsChannel(user) {
		err = fmt.Errorf("%s is a channel's memory, not a person's: /memory share and /memory private change a person's own files", user)
	}
	if err != nil {
		return false, err
	}
	who := user + " (/memory private)"
	if shared {
		who = user + " (/memory share)"
	}
	_, err = u.SetShared(path, shared, func(c memory.Commit) error {
		changed = true
		if m.changes != nil {
			m.changes.author(c, who)
		}
		return nil
	})
	if errors.Is(err, memory.ErrNotFound) {
		return false, fmt.Errorf("%w (%w)", err, fs.ErrNotExist)
	}
	if err != nil {
		return false, err
	}
	m.log.Info("memory: visibility changed at the user's request", "user", user, "path", path, "shared", shared, "changed", changed)
	return changed, nil
}

// Forgotten is what a forget did.
type Forgotten struct {
	// Dropped is what went besides the files ("" for nothing): the
	// queued messages, journaled turns and so on (userdata.Report).
	Dropped string
	// Missing is the store's error (wrapping memory.ErrNotFound) when
	// there was no such memory file, or no memory folder at all: the rest
	// of what was kept is gone all the same. nil when the files were there.
	Missing error
}

// Nothing reports that there was nothing to forget in the files.
func (f Forgotten) Nothing() bool { return f.Missing != nil }

// Answer is what a person is told in a chat after a forget of r: the one
// answer every chat surface gives.
func (f Forgotten) Answer(r userdata.Request) string {
	switch {
	case f.Nothing() && r.Path != "":
		return "There was nothing to forget: I have no file " + r.Path + " about you."
	case f.Nothing():
		return "There was nothing to forget: I don't remember anything about you."
	}
	msg := "Done: I have forgotten everything about you, " + r.Owner + "."
	if r.Path != "" {
		msg = "Done: I have forgotten " + r.Path + "."
	}
	if f.Dropped != "" {
		msg += " (Also " + f.Dropped + ".)"
	}
	return msg
}

// Forget deletes what is kept of r.Owner (one memory file with r.Path):
// the one forget of every surface — /memory forget in Slack and Discord,
// the terminal chat's (its own and a second chat's), the control socket and
// `mnemo memory forget`. It waits ForgetWait at most for a running
// reflection of the person. A missing file or folder is no error:
// Forgotten.Missing says so, once everything else kept is gone.
func (m *Memory) Forget(ctx context.Context, r userdata.Request) (Forgotten, error) {
	ctx, cancel := context.WithTimeout(ctx, ForgetWait)
	defer cancel()
	rep, err := m.svc.Forget(ctx, r)
	if m.changes != nil {
		m.changes.watchers.tell(r.Owner) // a whole folder goes without a change per file
	}
	f := Forgotten{Dropped: rep.String()}
	if errors.Is(err, memory.ErrNotFound) {
		f.Missing, err = err, nil
	}
	return f, err
}

// nothingError is a forget that found nothing to delete, as a platform's
// /memory flow is told: its text is Forgotten.Answer, and it wraps
// fs.ErrNotExist.
type nothingError struct{ answer string }

func (e nothingError) Error() string { return e.answer }

func (e nothingError) Unwrap() error { return fs.ErrNotExist }

// Platform is m as the chat platforms' /memory asks it (their Memory
// interface: Forget(user, path) error).
func (m *Memory) Platform() PlatformMemory { return PlatformMemory{m} }

// PlatformMemory is Memory with the chat platforms' Forget: an error
// wrapping fs.ErrNotExist, worded as Forgotten.Answer, when there was
// nothing to forget.
type PlatformMemory struct{ Asker }

// Forget is Asker.Forget of one file of user's memory, or all of it.
func (p PlatformMemory) Forget(user, path string) error {
	r := userdata.Request{Owner: user, Path: path}
	f, err := p.Asker.Forget(context.Background(), r)
	if err == nil && f.Nothing() {
		return nothingError{f.Answer(r)}
	}
	return err
}

// UseJournals (re)builds the forget's holders over what this process
// runs: the store, the history, the reflector, the Thinker's short-term
// history and the chat platforms' intake journals (live when a platform
// runs). Call it before the front ends take messages.
func (a *App) UseJournals(journals []userdata.Journal) {
	a.Memory.svc = userdata.New(userdata.Wiring{
		StateDir: a.cfg.State.Dir, Store: a.core.Store, History: a.hist,
		Reflect: a.core.Reflector, Agent: a.core.Agent, Journals: journals,
	}, a.log)
}
