package app

// A second `mnemo chat` on a data folder another process owns (a chat or
// serve: it holds the lock) talks through that process's control socket
// instead of being refused: its lines go to the owner's terminal platform
// (bots/console, the pipeline every platform is on), as the owner's own
// chat's do. This file is the owner's half; cmd/mnemo's remoteclient.go is
// the second chat's, whose terminal shows what comes back.
//
// The session (op "chat", Arg the protocol version, User the memory user)
// carries control.Events, one JSON line each:
//
//	client → owner  message {id, text}   a line typed: a message, or a command
//	                                     (/memory …, /forget …: the platform's words)
//	                cancel  {id}         Ctrl-C: not remembered, cancelled
//	owner → client  text    {text}       the next words of the reply
//	                status  {text}       what the agent does meanwhile
//	                reply   {text, failed, streamed, cut, forgot, error}
//	                end     {text, error} the session is over (the owner stops)
//
// One line at a time: the client waits for its reply before it sends the
// next (cancel excepted).

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/mnemo-agent/mnemo/bots/platform"
	"github.com/mnemo-agent/mnemo/cmd/internal/control"
	"github.com/mnemo-agent/mnemo/memory"
)

// ChatProtocol is the version of the chat session's events: an owner and a
// client of different versions refuse each other, saying so. 2: commands
// are lines, answered by the terminal platform.
const ChatProtocol = "2"

// MaxRemoteChats bounds the chats talking through one process at once.
const MaxRemoteChats = 8

// maxRemoteMessage bounds a message's text (the console's own line bound).
const maxRemoteMessage = 1 << 20

// The chat session's event types.
const (
	EvMessage = "message"
	EvCancel  = "cancel"
	EvText    = "text"
	EvStatus  = "status"
	EvReply   = "reply"
	EvEnd     = "end"
)

// EndStopping is the end event's text when the owner stops.
const EndStopping = "stopping"

// ConsoleHandler is the terminal platform's path to the Thinker, the same
// for the owner's own chat and for the chats through it: measured, and
// explaining a failure at the terminal instead of apologising.
func (a *App) ConsoleHandler() Handler {
	return explainingHandler{measuredHandler{a.core.Agent, a.metrics},
		explainer{baseURL: a.baseURL, model: a.cfg.LLM.Model, models: a.llm}}
}

// TerminalDeps are what the terminal platform (bots/console) is made
// with: the explaining handler, /memory as the terminal shows it, this
// app's withdraw for Ctrl-C, Remember this (/memory remember); no access
// rules and no budget (the terminal is the operator's own). Adapters and
// Terminal add what every platform is given (its section, its logger, …).
func (a *App) TerminalDeps() platform.Deps {
	return platform.Deps{Handler: a.ConsoleHandler(), Memory: chatMemory{a.Memory.Platform()},
		Logger: a.log, Withdraw: a.Withdraw, Keeper: a.keeper}
}

// chatMemory is the chat platforms' memory with the terminal's /memory:
// the files' text, not their list (userdata.Service.ShowChat).
type chatMemory struct{ PlatformMemory }

func (c chatMemory) Show(user, _ string) (string, error) { return c.Asker.ShowChat(user) }

// chatSession serves a second chat for as long as it runs: its lines go to
// the terminal platform as the owner's own chat's do, as memory user
// req.User (its turns journaled and reflected under that user). It ends
// when the client hangs up, or tells the client when this process stops.
func (a *App) chatSession(ctx context.Context, req control.Request, s *control.Session) error {
	if req.Arg != ChatProtocol {
		return fmt.Errorf("this mnemo speaks chat protocol %s and the second chat %q: run both from the same mnemo version", ChatProtocol, req.Arg)
	}
	if err := memory.ValidateUser(req.User); err != nil {
		return fmt.Errorf("chat: --user: %w", err)
	}
	if a.chats == nil {
		return errors.New("chat: this process runs no terminal chat platform")
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
	conv := a.chats.Conversation(user)
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
			var err error
			switch e.Type {
			case EvMessage:
				err = a.remoteLine(ctx, s, conv, user, e)
			case EvCancel: // a reply already done: nothing to cancel
			default:
				err = fmt.Errorf("chat: unknown event %q; this mnemo knows %q and %q", e.Type, EvMessage, EvCancel)
				_ = s.Send(control.Event{Type: EvEnd, Error: err.Error()})
			}
			switch {
			case errors.Is(err, io.EOF):
				return nil // the client ended its chat during the reply
			case errors.Is(err, errStopping):
				_ = s.Send(control.Event{Type: EvEnd, Text: EndStopping})
				return nil
			case err != nil:
				return err
			}
		}
	}
}

// errStopping is a line the terminal platform no longer takes: this
// process stops.
var errStopping = errors.New("chat: stopping")

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

// remoteLine answers one line of a second chat, showing the reply as it is
// written. A message taken is answered and remembered even when the client
// leaves meanwhile (as a piped chat's is); a cancel withdraws it first. A
// non-nil error ends the session.
func (a *App) remoteLine(ctx context.Context, s *control.Session, conv platform.Conversation, user string, e control.Event) error {
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
	done := make(chan struct{})
	var (
		said platform.Said
		err  error
	)
	go func() {
		defer close(done)
		said, err = conv.Say(context.WithoutCancel(ctx), platform.Line{ID: e.ID, Text: e.Text, Show: remoteStream{s}})
	}()
	events, gone := s.Events(), false
	hard, closing := ctx.Done(), s.Closing()
	var broke error
	for waiting := true; waiting; {
		select {
		case <-done:
			waiting = false
		case <-hard: // the server gave up waiting: the model calls are cut too (CancelCalls)
			conv.Cancel(e.ID)
			hard = nil
		case <-closing:
			a.log.Info("control: stopping: a reply to a chat through this process is being written; it has until the grace is over", "user", user)
			closing = nil
		case ev, ok := <-events:
			switch {
			case !ok: // the client left: the reply is made all the same
				events, gone = nil, true
			case ev.Type == EvCancel && ev.ID == e.ID:
				conv.Cancel(e.ID)
			case ev.Type == EvCancel: // a reply already done: nothing to cancel
			default: // a client out of step: the session ends, and the reply with it
				broke = fmt.Errorf("chat: a %q event while a reply is written; the client waits for the reply", ev.Type)
				events = nil
				conv.Cancel(e.ID)
			}
		}
	}
	switch {
	case broke != nil:
		_ = s.Send(control.Event{Type: EvEnd, Error: broke.Error()})
		return broke
	case gone && errors.Is(s.Err(), io.EOF):
		return io.EOF // ended by the client: no error to log
	case gone:
		return s.Err()
	case err != nil:
		return errStopping // the platform closes: this process stops
	}
	ev := control.Event{Type: EvReply, Failed: said.Failed, Streamed: said.Streamed, Cut: said.Cut, Forgot: said.Forgot}
	if !said.Streamed {
		ev.Text = said.Text
	}
	return s.Send(ev)
}

// remoteStream shows a reply to a second chat as it is written.
type remoteStream struct{ s *control.Session }

func (r remoteStream) Text(delta string) { _ = r.s.Send(control.Event{Type: EvText, Text: delta}) }

func (r remoteStream) Status(status string) {
	_ = r.s.Send(control.Event{Type: EvStatus, Text: status})
}
