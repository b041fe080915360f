package app

// The control socket of a running chat or serve (cmd/internal/control):
// `mnemo memory forget` and `mnemo access` cannot change the data folder
// under the process that owns it, so they ask that process to make the
// change, and report success only once the process has answered that it
// is done; a second `mnemo chat` talks through it (chatsession.go).

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/mnemo-agent/mnemo/cmd/internal/config"
	"github.com/mnemo-agent/mnemo/cmd/internal/control"
	"github.com/mnemo-agent/mnemo/cmd/internal/userdata"
)

// The control socket's operations.
const (
	// OpForget is `mnemo memory forget`: User, Path, KeepHistory.
	OpForget = "forget"
	// OpAccess is `mnemo access allow|revoke|approve`: the subcommand in
	// Request.Path, its argument in Request.Arg.
	OpAccess = "access"
	// OpChat is a second chat (a session, chatsession.go).
	OpChat = "chat"
)

// controlSocketName is the control socket's file in the state folder.
const controlSocketName = "mnemo.sock"

// ControlSocket is cfg's control socket path.
func ControlSocket(cfg *config.Config) string {
	return filepath.Join(cfg.State.Dir, controlSocketName)
}

// ListenControl serves the control socket for as long as the command
// runs; it is taken after the data folder's lock, which makes this process
// the only one that may serve it.
func (a *App) ListenControl() (*control.Server, error) {
	s, err := control.Listen(ControlSocket(a.cfg), a.Control, control.Options{
		Sessions: map[string]control.SessionHandler{OpChat: a.chatSession}, MaxSessions: MaxRemoteChats,
	}, a.log)
	if err != nil {
		return nil, fmt.Errorf("%w (mnemo memory forget and a second mnemo chat use it to reach the running process)", err)
	}
	return s, nil
}

// Control answers one request of the control socket. A forget (of a
// user's memory or a channel's) answers with what it dropped besides the
// files ("" for nothing); a forget of all of a user's memory when the user
// has no folder drops the pending work and is no error (the caller knows
// whether there was a folder); a forget of a file that is not there is
// the store's error.
func (a *App) Control(ctx context.Context, req control.Request) (string, error) {
	if req.Op == OpAccess {
		return a.accessControl(req)
	}
	if req.Op != OpForget {
		return "", fmt.Errorf("unknown control operation %q; this mnemo knows %q, %q and %q", req.Op, OpForget, OpAccess, OpChat)
	}
	a.log.Info("control: forget requested by mnemo memory forget", "user", req.User, "path", req.Path)
	r := userdata.Request{Owner: req.User, Path: req.Path, KeepHistory: req.KeepHistory}
	f, err := a.Memory.Forget(ctx, r)
	if err != nil {
		return "", err
	}
	if req.Path != "" && f.Nothing() {
		return "", f.Missing
	}
	return f.Dropped, nil
}
