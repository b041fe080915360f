package app

// A second `mnemo chat` on a data folder another process owns (a chat or
// serve: it holds the lock) talks through that process's control socket
// instead of being refused: the owner answers its messages with its own
// Thinker, memory and reflector, as it answers its own chat's. This file
// is the owner's half; cmd/mnemo's remoteclient.go is the second chat's.
//
// The session (op "chat", Arg the protocol version, User the memory user)
// carries control.Events, one JSON line each:
//
//	client → owner  message {id, text}      a message to answer
//	                cancel  {id}            Ctrl-C: not remembered, cancelled
//	                show                    /memory
//	                share   {path, shared}  /memory share|private FILE
//	                forget                  /forget yes
//	                why     {text}          /memory why TEXT
//	owner → client  text    {text}          the next words of the reply
//	                status  {text}          what the agent does meanwhile
//	                reply   {text, failed, streamed, cut, error}
//	                answer  {text, changed, missing, error}
//	                end     {text, error}   the session is over (the owner stops)
//
// One message or command at a time: the client waits for its reply or
// answer before it sends the next (cancel excepted).

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sync/atomic"
	"time"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/cmd/internal/control"
	"github.com/mnemo-agent/mnemo/memory"
)

// ChatProtocol is the version of the chat session's events: an owner and a
// client of different versions refuse each other, saying so.
const ChatProtocol = "1"

// MaxRemoteChats bounds the chats talking through one process at once.
const MaxRemoteChats = 8

// maxRemoteMessage bounds a message's text (the console's own line bound).
const maxRemoteMessage = 1 << 20

// The chat session's event types.
const (
	EvMessage = "message"
	EvCancel  = "cancel"
	EvShow    = "show"
	EvShare   = "share"
	EvForget  = "forget"
	EvWhy     = "why"
	EvText    = "text"
	EvStatus  = "status"
	EvReply   = "reply"
	EvAnswer  = "answer"
	EvEnd     = "end"
)

// EndStopping is the end event's text when the owner stops.
const EndStopping = "stopping"

// ConsoleHandler is the chat's path to the Thinker, the same for the
// owner's own chat and for the chats through it: measured, and explaining a
// failure at the terminal instead of apologising; failed counts the
// messages left unanswered.
func (a *App) ConsoleHandler(failed *atomic.Int64) Handler {
	return explainingHandler{measuredHandler{a.core.Agent, a.metrics},
		explainer{baseURL: a.baseURL, model: a.cfg.LLM.Model, models: a.llm}, failed}
}

// chatSession serves a second chat for as long as it runs: its messages go
// through consoleHandler as the owner's own chat's do, as memory user
// req.User (its turns journaled and reflected under that user), and its
// /memory and /forget act on that user. It ends when the client hangs up,
// or tells the client when this process stops.
func (a *App) chatSession(ctx context.Context, req control.Request, s *control.Session) error {
	if req.Arg != ChatProtocol {
		return fmt.Errorf("this mnemo speaks chat protocol %s and the second chat %q: run both from the same mnemo version", ChatProtocol, req.Arg)
	}
	if err := memory.ValidateUser(req.User); err != nil {
		return fmt.Errorf("chat: --user: %w", err)
	}
	if err := s.Open(""); err != nil {
		return err
	}
	user := req.User
	a.log.Info("control: a chat through this process began", "user", user)
	defer a.log.Info("control: a chat through this process ended", "user", user)
	// The user's files as they are now are kept in the history before
	// anything of this chat changes them, so that the first change can be
	// undone (a chat owner kept only its own person's at its start; serve
	// kept everyone's, and then this reads nothing again).
	a.changes.baseline(ctx, a.core.Store, user)
	var failed atomic.Int64
	h := a.ConsoleHandler(&failed)
	for {
		select {
		case <-s.Closing():
			_ = s.Send(control.Event{Type: EvEnd, Text: EndStopping})
			return nil
		case e, ok := <-s.Events():
			if !ok {
				if errors.Is(s.Err(), io.EOF) {
					return nil // the client ended its chat
				}
				return s.Err()
			}
			if e.Type == EvMessage {
				if err := a.remoteTurn(ctx, s, h, &failed, user, e); errors.Is(err, io.EOF) {
					return nil // the client ended its chat during the reply
				} else if err != nil {
					return err
				}
				continue
			}
			answer, err := a.remoteCommand(user, e)
			if err != nil {
				_ = s.Send(control.Event{Type: EvEnd, Error: err.Error()})
				return err
			}
			if err := s.Send(answer); err != nil {
				if s.Send(control.Event{Type: EvAnswer, Error: err.Error()}) != nil {
					return err
				}
			}
		}
	}
}

// validTaskID reports whether id is a task id a client may name: what
// mnemo.NewTaskID makes, or near it.
func validTaskID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, r := range id {
		if !('A' <= r && r <= 'Z' || 'a' <= r && r <= 'z' || '0' <= r && r <= '9') {
			return false
		}
	}
	return true
}

// remoteTurn answers one message of a second chat, showing the reply as
// it is written. A message taken is answered and remembered even when the
// client leaves meanwhile (as a piped chat's is); a cancel withdraws it
// first. A non-nil error ends the session.
func (a *App) remoteTurn(ctx context.Context, s *control.Session, h Handler, failed *atomic.Int64, user string, e control.Event) error {
	switch {
	case !validTaskID(e.ID):
		err := fmt.Errorf("chat: bad message id %q", e.ID)
		_ = s.Send(control.Event{Type: EvEnd, Error: err.Error()})
		return err
	case len(e.Text) > maxRemoteMessage || e.Text == "":
		err := fmt.Errorf("chat: a message must have 1 to %d bytes, not %d", maxRemoteMessage, len(e.Text))
		_ = s.Send(control.Event{Type: EvEnd, Error: err.Error()})
		return err
	}
	tctx, cancel := context.WithCancel(context.Background()) // bounded by the model calls' gate at shutdown
	defer cancel()
	t := mnemo.Task{ID: e.ID, User: user, Conversation: "console:" + user, Platform: "console",
		Speaker: user, Text: e.Text, Time: time.Now(), Stream: remoteStream{s}}
	before := failed.Load()
	done := make(chan struct{})
	var (
		reply mnemo.Reply
		err   error
	)
	go func() {
		defer close(done)
		reply, err = h.Handle(tctx, t)
	}()
	events, gone := s.Events(), false
	hard, closing := ctx.Done(), s.Closing()
	var broke error
	for waiting := true; waiting; {
		select {
		case <-done:
			waiting = false
		case <-hard: // the server gave up waiting (the model calls are cut too)
			cancel()
			hard = nil
		case <-closing:
			a.log.Info("control: stopping: a reply to a chat through this process is being written; it has until the grace is over", "user", user)
			closing = nil
		case ev, ok := <-events:
			switch {
			case !ok: // the client left: the reply is made all the same
				events, gone = nil, true
			case ev.Type == EvCancel && ev.ID == e.ID:
				a.Withdraw(e.ID)
				cancel()
			case ev.Type == EvCancel: // a reply already done: nothing to cancel
			default:
				broke = fmt.Errorf("chat: a %q event while a reply is written; the client waits for the reply", ev.Type)
				events = nil
			}
		}
	}
	if broke != nil {
		_ = s.Send(control.Event{Type: EvEnd, Error: broke.Error()})
		return broke
	}
	if gone {
		if errors.Is(s.Err(), io.EOF) {
			return io.EOF // ended by the client: no error to log
		}
		return s.Err()
	}
	ev := control.Event{Type: EvReply, Failed: failed.Load() > before, Streamed: reply.Streamed, Cut: reply.Cut}
	if !reply.Streamed {
		ev.Text = reply.Text
	}
	if err != nil {
		ev = control.Event{Type: EvReply, Error: err.Error()}
	}
	return s.Send(ev)
}

// remoteStream shows a reply to a second chat as it is written.
type remoteStream struct{ s *control.Session }

func (r remoteStream) Text(delta string) { _ = r.s.Send(control.Event{Type: EvText, Text: delta}) }

func (r remoteStream) Status(status string) {
	_ = r.s.Send(control.Event{Type: EvStatus, Text: status})
}

// remoteCommand answers /memory, /memory share|private, /memory why and /forget yes of
// a second chat, for its user, as the owner's own chat does; an event of no
// known type is an error (it ends the session).
func (a *App) remoteCommand(user string, e control.Event) (control.Event, error) {
	answer := control.Event{Type: EvAnswer}
	var err error
	switch e.Type {
	case EvShow:
		answer.Text, err = a.Memory.ShowChat(user)
	case EvShare:
		answer.Changed, err = a.Memory.SetShared(user, e.Path, e.Shared)
		answer.Missing = errors.Is(err, fs.ErrNotExist)
	case EvForget:
		answer.Text, err = ForgetAnswer(a.Memory, user)
	case EvWhy:
		answer.Text, err = a.Memory.Why(user, "", e.Text, false)
	default:
		return control.Event{}, fmt.Errorf("chat: unknown event %q; this mnemo knows %q, %q, %q, %q, %q and %q", e.Type, EvMessage, EvCancel, EvShow, EvShare, EvForget, EvWhy)
	}
	if err != nil {
		answer.Error = err.Error()
	}
	return answer, nil
}
