package main

// The second chat's half of a chat through the owner (the owner's half is
// cmd/internal/app/chatsession.go): the console runs here, at this person's
// terminal or pipe, as it does in a chat of its own (line editing, the
// reply streamed and rendered, Ctrl-C, the up arrow's history); its lines —
// messages, /memory and its aliases — go to the terminal platform of the
// process that owns the data folder.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/mnemo-agent/mnemo/bots/console"
	"github.com/mnemo-agent/mnemo/bots/platform"
	"github.com/mnemo-agent/mnemo/cmd/internal/app"
	"github.com/mnemo-agent/mnemo/cmd/internal/config"
	"github.com/mnemo-agent/mnemo/cmd/internal/control"
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
	var unanswered atomic.Int64
	runErr := console.Run(cctx, console.Config{
		In: env.stdin, Out: env.stdout, Interactive: interactive, User: name,
		Chat: rc, Unanswered: &unanswered,
		History: history, HistoryRoot: historyRoot,
		Color: interactive && wantsColor(env),
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
	return chatShortfall(interactive, unanswered.Load(), nil)
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

// remote is the owner's terminal platform, over conn
// (platform.Conversation).
type remote struct {
	conn   *control.Conn
	holder string
	events chan control.Event // the owner's events but end; closed when it ends or hangs up
	quit   chan struct{}      // closed by close: the reader stops
	done   chan struct{}      // closed when the reader stopped
	once   sync.Once

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

// Say sends l to the owner and shows its reply as the owner writes it; it
// returns when the reply is done (a Ctrl-C cancels it through Cancel).
func (r *remote) Say(_ context.Context, l platform.Line) (platform.Said, error) {
	if err := r.send(control.Event{Type: app.EvMessage, ID: l.ID, Text: l.Text}); err != nil {
		return platform.Said{}, err
	}
	var text strings.Builder
	for {
		e, err := r.next()
		if err != nil {
			return platform.Said{}, err
		}
		switch e.Type {
		case app.EvText:
			text.WriteString(e.Text)
			if l.Show != nil {
				l.Show.Text(e.Text)
			}
		case app.EvStatus:
			if l.Show != nil {
				l.Show.Status(e.Text)
			}
		case app.EvReply:
			if e.Error != "" {
				return platform.Said{}, errors.New(e.Error)
			}
			said := platform.Said{Text: e.Text, Failed: e.Failed, Streamed: e.Streamed, Cut: e.Cut, Forgot: e.Forgot}
			if e.Streamed {
				said.Text = text.String()
			}
			return said, nil
		default:
			return platform.Said{}, fmt.Errorf("%s sent a %q event during a reply; run both chats from the same mnemo version", r.holder, e.Type)
		}
	}
}

// Cancel is Ctrl-C on a reply: the owner keeps the turn from its
// reflector and cancels it, then sends what the reply was.
func (r *remote) Cancel(id string) { _ = r.send(control.Event{Type: app.EvCancel, ID: id}) }
