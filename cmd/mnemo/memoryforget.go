package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/cmd/internal/app"
	"github.com/mnemo-agent/mnemo/cmd/internal/control"
	"github.com/mnemo-agent/mnemo/cmd/internal/userdata"
	"github.com/mnemo-agent/mnemo/cmd/internal/wiring"
	"github.com/mnemo-agent/mnemo/memory"
)

// forgetCallMargin is how much longer than app.ForgetWait (the forget's
// own bound) the CLI waits for the running process's answer.
const forgetCallMargin = 15 * time.Second

// forget deletes one file of a user's memory, or all of it, together with
// everything else kept of the user (userdata.Holders); or one file or all of a channel's
// memory. A user's forget never touches a channel's memory: what they said
// in a channel is the channel's. It prints "deleted …" only once all of
// that is done, by this process or by the running one.
func (m *memoryCmd) forget(ctx context.Context, name, p string, yes, keepHistory bool) error {
	what, err := m.forgetTarget(name, p)
	if err != nil {
		return err
	}
	if !yes {
		if what == "" {
			return m.noUser(name)
		}
		return usageError("this would delete %s%s; add --yes to delete it", what, m.channelsKept(name, p))
	}
	lock, err := m.lock()
	if held := (*lockHeldError)(nil); errors.As(err, &held) {
		return m.forgetRemote(ctx, held, name, p, what, keepHistory)
	}
	if err != nil {
		return err
	}
	defer lock.Close()
	// Done here, not by a running mnemo: what it writes is ours.
	if err := ownerGuard(m.env, m.cfg, "forget", m.opts); err != nil {
		return err
	}
	mem, done, err := m.data(!keepHistory)
	if err != nil {
		return err
	}
	defer done()
	r := userdata.Request{Owner: name, Path: p, KeepHistory: keepHistory}
	f, err := mem.Forget(ctx, r)
	switch {
	case err != nil:
		return failure(err)
	case f.Nothing() && p != "": // gone since forgetTarget looked
		return failure(f.Missing)
	}
	// No folder at all: the pending work is gone, reportForget says the rest.
	return m.reportForget(name, what, f.Dropped, "")
}

// channelsKept is what the question before a user's forget of all their
// memory adds when there are channels' memories: they stay.
func (m *memoryCmd) channelsKept(name, p string) string {
	if p != "" || mnemo.IsChannel(name) {
		return ""
	}
	if channels, err := m.store.Channels(); err != nil || len(channels) == 0 {
		return ""
	}
	return " (the channels' memories stay as they are: what " + name + " said in a channel is the channel's; mnemo memory users lists them)"
}

// forgetTarget says what a forget deletes: "alice/facts/pets.md (1.2 KB)",
// "all memory of alice: …" or "all memory of channel #slack-T01-C02: …".
// It is "" for all of a user who has no memory folder (there may still be
// pending turns to drop); a missing file is an error naming the fix.
func (m *memoryCmd) forgetTarget(name, p string) (string, error) {
	if p == "" {
		if !m.hasFolder(name) {
			return "", nil
		}
		u, files, err := wiring.Files(m.store, name)
		if err != nil {
			return "", err
		}
		dir := filepath.Join(m.store.Dir(), u.Name())
		of := u.Name()
		if mnemo.IsChannel(of) {
			of = "channel " + of
		}
		return fmt.Sprintf("all memory of %s: the folder %s and its %d memory file%s", of, dir, len(files), plural(len(files))), nil
	}
	u, err := m.user(name)
	if err != nil {
		return "", err
	}
	fi, err := u.Stat(p)
	if errors.Is(err, memory.ErrNotFound) {
		return "", failure(fmt.Errorf("%s has no file %s; mnemo memory ls %s lists them", name, p, shellName(name)))
	}
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%s/%s (%s)", name, p, memory.FormatSize(fi.Size())), nil
}

// forgetRemote asks the process that holds the lock to do the forget and
// waits for its answer: that process has done it when it answers.
func (m *memoryCmd) forgetRemote(ctx context.Context, held *lockHeldError, name, p, what string, keepHistory bool) error {
	sock := app.ControlSocket(m.cfg)
	target := name
	if p != "" {
		target += "/" + p
	}
	fmt.Fprintf(m.env.stderr, "mnemo: %s owns the data folder; asking it to forget %s…\n", held.holder, target)
	ctx, cancel := context.WithTimeout(ctx, app.ForgetWait+forgetCallMargin)
	defer cancel()
	msg, err := control.Call(ctx, sock, control.Request{Op: app.OpForget, User: name, Path: p, KeepHistory: keepHistory})
	if ns := (*control.NoServerError)(nil); errors.As(err, &ns) {
		return failure(fmt.Errorf("data folder %s is in use by %s, which does not answer on the control socket %s (%w); "+
			"if it is starting or stopping, run this again in a moment; if it is a mnemo without a control socket, stop it and run this again "+
			"(meanwhile /memory forget works in Slack and Discord)", m.cfg.Memory.DataDir, held.holder, sock, ns.Err))
	}
	if err != nil {
		return failure(fmt.Errorf("%s could not forget %s: %w", held.holder, target, err))
	}
	return m.reportForget(name, what, msg, " (done by "+held.holder+")")
}

// reportForget prints what a finished forget did.
func (m *memoryCmd) reportForget(name, what, dropped, by string) error {
	var line string
	switch {
	case what != "":
		line = "deleted " + what
	case dropped != "":
		line = name + " has no memory files"
	default:
		return m.noUser(name)
	}
	if dropped != "" {
		line += "; also " + dropped
	}
	_, err := fmt.Fprintln(m.env.stdout, line+by)
	return err
}
