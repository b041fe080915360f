package main

// The second chat's half of a chat through the owner (remotechat.go): the
// console runs here, at this person's terminal or pipe, as it does in a
// chat of its own (line editing, the reply streamed and rendered, Ctrl-C,
// the up arrow's history); its messages, /memory and /forget are carried
// out by the process that owns the data folder.

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/bots/console"
	"github.com/mnemo-agent/mnemo/cmd/internal/app"
	"github.com/mnemo-agent/mnemo/cmd/internal/config"
	"github.com/mnemo-agent/mnemo/cmd/internal/control"
	"github.com/mnemo-agent/mnemo/memory"
)

// errOwnerGone cancels a second chat when the owner ends it or hangs up.
var errOwnerGone = errors.New("the process that owns the data folder ended this chat")

// remoteChat is runChat when held is the process that owns the data
// folder: the chat talks through its control socket. When nothing answers
// there (an older mnemo, one run by another user, one starting or
// stopping) it fails naming the fix, as before.
func remoteChat(ctx context.Context, env *cliEnv, cfg *config.Config, held *lockHeldError, name string, interactive bool) error {
	sock := app.ControlSocket(cfg)
	conn, err := control.Open(ctx, sock, control.Request{Op: app.OpChat, User: name, Arg: app.ChatProtocol})
	if ns := (*control.NoServerError)(nil); errors.As(err, &ns) {
		return failure(fmt.Errorf("data folder %s is in use by %s, which does not answer on the control socket %s (%w); "+
			"if it is starting or stopping, run this again in a moment; if it is an older mnemo or runs as another user, "+
			"stop it or point --config / MNEMO_DATA_DIR elsewhere", cfg.Memory.DataDir, held.holder, sock, ns.Err))
	}
	if err != nil && strings.Contains(err.Error(), "unknown control operation") {
		return failure(fmt.Errorf("data folder %s is in use by %s, an older mnemo that cannot take a second chat (it said: %v); "+
			"restart it with this mnemo, or stop it to chat here", cfg.Memory.DataDir, held.holder, err))
	}
	if err != nil {
		return failure(fmt.Errorf("%s owns the data folder %s and did not take this chat: %w", held.holder, cfg.Memory.DataDir, err))
	}
	cctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	rc := newRemote(conn, held.holder, stop)
	defer rc.close()
	if env.abort != nil { // a second signal: stop waiting for the owner
		go func() {
			select {
			case <-env.abort:
				conn.Close()
			case <-rc.quit:
			}
		}()
	}
	var history string
	var historyRoot *os.Root
	if interactive {
		fmt.Fprintf(env.stderr, "mnemo: %s owns this data folder: this chat talks through it (its memory, its reflector).\n", held.holder)
		history, historyRoot = chatHistory(env, cfg, name)
		if historyRoot != nil {
			defer historyRoot.Close()
		}
	}
	runErr := console.Run(cctx, console.Config{
		In: env.stdin, Out: env.stdout, Interactive: interactive, User: name,
		Handler: rc, Withdraw: rc.withdraw,
		History: history, HistoryRoot: historyRoot,
		Color:  interactive && wantsColor(env),
		Memory: rc.show, Visibility: rc, Forget: rc.forget, Why: rc.why,
	})
	gone := context.Cause(cctx) == errOwnerGone
	rc.close()
	switch {
	case aborted(env):
		return abortError()
	case gone && ctx.Err() == nil:
		return failure(rc.goneError())
	case runErr != nil && ctx.Err() == nil:
		return failure(runErr)
	}
	if interactive {
		fmt.Fprintf(env.stderr, "mnemo: %s keeps what is worth remembering of this chat.\n", held.holder)
	}
	return chatShortfall(interactive, rc.failed.Load(), nil)
}

// aborted reports whether a second signal came.
func aborted(env *cliEnv) bool {
	select {
	case <-env.abort:
		return env.abort != nil
	default:
		return false
	}
}

// remote is the console's handler, /memory and /forget, carried out by
// the owner over conn.
type remote struct {
	conn   *control.Conn
	holder string
	events chan control.Event // the owner's events but end; closed when it ends or hangs up
	quit   chan struct{}      // closed by close: the reader stops
	done   chan struct{}      // closed when the reader stopped
	once   sync.Once
	failed atomic.Int64 // messages left unanswered

	end control.Event // the owner's end event, if it sent one (set before events is closed)
}

func newRemote(conn *control.Conn, holder string, stop context.CancelCauseFunc) *remote {
	r := &remote{conn: conn, holder: holder, events: make(chan control.Event), quit: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(r.done)
		defer stop(errOwnerGone)
		defer close(r.events)
		for {
			e, err := conn.Recv()
			if err != nil {
				return
			}
			if e.Type == app.EvEnd {
				r.end = e
				return
			}
			select {
			case r.events <- e:
			case <-r.quit:
				return
			}
		}
	}()
	return r
}

// close ends the chat: the owner sees its end, the reader stops.
func (r *remote) close() {
	r.once.Do(func() {
		close(r.quit)
		r.conn.CloseWrite()
		r.conn.Close()
		<-r.done
	})
}

// goneError says why the owner's side ended.
func (r *remote) goneError() error {
	switch {
	case r.end.Text == app.EndStopping:
		return fmt.Errorf("%s stopped, and this chat with it (what it answered is remembered); run mnemo chat again to go on", r.holder)
	case r.end.Error != "":
		return fmt.Errorf("%s ended this chat: %s", r.holder, r.end.Error)
	}
	return fmt.Errorf("%s hung up on this chat: did it stop? run mnemo chat again to go on", r.holder)
}

// next is the owner's next event; an error when it ended or hung up.
func (r *remote) next() (control.Event, error) {
	e, ok := <-r.events
	if !ok {
		return control.Event{}, r.goneError()
	}
	return e, nil
}

// send writes e; an error when the owner is gone.
func (r *remote) send(e control.Event) error {
	if err := r.conn.Send(e); err != nil {
		select {
		case <-r.done:
			return r.goneError()
		default:
		}
		return fmt.Errorf("%s does not take this chat's messages: %w", r.holder, err)
	}
	return nil
}

// Handle sends t's message to the owner and shows its reply as the owner
// writes it; it returns when the reply is done (a Ctrl-C cancels it
// through withdraw, which the console calls first).
func (r *remote) Handle(_ context.Context, t mnemo.Task) (mnemo.Reply, error) {
	if t.ID == "" {
		t.ID = mnemo.NewTaskID()
	}
	if err := r.send(control.Event{Type: app.EvMessage, ID: t.ID, Text: t.Text}); err != nil {
		return mnemo.Reply{}, err
	}
	var text strings.Builder
	for {
		e, err := r.next()
		if err != nil {
			return mnemo.Reply{}, err
		}
		switch e.Type {
		case app.EvText:
			text.WriteString(e.Text)
			if t.Stream != nil {
				t.Stream.Text(e.Text)
			}
		case app.EvStatus:
			if t.Stream != nil {
				t.Stream.Status(e.Text)
			}
		case app.EvReply:
			if e.Error != "" {
				return mnemo.Reply{}, errors.New(e.Error)
			}
			if e.Failed {
				r.failed.Add(1)
			}
			reply := mnemo.Reply{TaskID: t.ID, Text: e.Text, Failed: e.Failed, Streamed: e.Streamed, Cut: e.Cut}
			if e.Streamed {
				reply.Text = text.String()
			}
			return reply, nil
		default:
			return mnemo.Reply{}, fmt.Errorf("%s sent a %q event during a reply; run both chats from the same mnemo version", r.holder, e.Type)
		}
	}
}

// withdraw is Ctrl-C on a reply: the owner keeps the turn from its
// reflector and cancels it, then sends what the reply was.
func (r *remote) withdraw(id string) { _ = r.send(control.Event{Type: app.EvCancel, ID: id}) }

// ask sends a command and returns the owner's answer.
func (r *remote) ask(e control.Event) (control.Event, error) {
	if err := r.send(e); err != nil {
		return control.Event{}, err
	}
	a, err := r.next()
	if err == nil && a.Type != app.EvAnswer {
		err = fmt.Errorf("%s sent a %q event for an answer; run both chats from the same mnemo version", r.holder, a.Type)
	}
	return a, err
}

// show is /memory, by the owner.
func (r *remote) show(string) (string, error) { return r.command(app.EvShow) }

// why is /memory why TEXT, by the owner.
func (r *remote) why(_, text string) (string, error) {
	a, err := r.ask(control.Event{Type: app.EvWhy, Text: text})
	if err == nil && a.Error != "" {
		err = errors.New(a.Error)
	}
	return a.Text, err
}

// forget is /forget yes, by the owner.
func (r *remote) forget(string) (string, error) { return r.command(app.EvForget) }

// command asks the owner for a command's answer text.
func (r *remote) command(typ string) (string, error) {
	a, err := r.ask(control.Event{Type: typ})
	if err == nil && a.Error != "" {
		err = errors.New(a.Error)
	}
	return a.Text, err
}

// CheckPath is Visibility's: a memory file name or not.
func (r *remote) CheckPath(p string) error {
	_, err := memory.ParsePath(p)
	return err
}

// SetShared is /memory share and /memory private, by the owner.
func (r *remote) SetShared(_, path string, shared bool) (bool, error) {
	a, err := r.ask(control.Event{Type: app.EvShare, Path: path, Shared: shared})
	switch {
	case err != nil:
		return false, err
	case a.Missing:
		return false, fmt.Errorf("%s (%w)", a.Error, fs.ErrNotExist)
	case a.Error != "":
		return false, errors.New(a.Error)
	}
	return a.Changed, nil
}
