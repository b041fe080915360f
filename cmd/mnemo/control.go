package main

// The control socket of a running chat or serve (cmd/internal/control):
// `mnemo memory forget` cannot change the data folder under the process
// that owns it, so it asks that process to do the forget, and reports
// success only once the process has answered that it is done.

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/mnemo-agent/mnemo/cmd/internal/config"
	"github.com/mnemo-agent/mnemo/cmd/internal/control"
	"github.com/mnemo-agent/mnemo/cmd/internal/userdata"
	"github.com/mnemo-agent/mnemo/memory"
)

// controlSocketName is the control socket's file in the state folder.
const controlSocketName = "mnemo.sock"

// opForget is the control operation behind `mnemo memory forget`.
const opForget = "forget"

// controlSocket is cfg's control socket path.
func controlSocket(cfg *config.Config) string { return filepath.Join(stateDir(cfg), controlSocketName) }

// listenControl serves the control socket for as long as the command runs;
// it is taken after the data folder's lock, which makes this process the
// only one that may serve it.
func (a *app) listenControl() (*control.Server, error) {
	s, err := control.ListenWith(controlSocket(a.cfg), a.control, control.Options{
		Sessions: map[string]control.SessionHandler{opChat: a.chatSession}, MaxSessions: maxRemoteChats,
	}, a.env.logger)
	if err != nil {
		return nil, failure(fmt.Errorf("%w (mnemo memory forget and a second mnemo chat use it to reach the running process)", err))
	}
	return s, nil
}

// control answers one request of the control socket. A forget (of a
// user's memory or a channel's) answers with what it dropped besides the
// files ("" for nothing); a forget of all of a user's memory when the user
// has no folder drops the pending work and is no error (the caller knows
// whether there was a folder).
func (a *app) control(ctx context.Context, req control.Request) (string, error) {
	if req.Op == opAccess {
		return a.accessControl(req)
	}
	if req.Op != opForget {
		return "", fmt.Errorf("unknown control operation %q; this mnemo knows %q, %q and %q", req.Op, opForget, opAccess, opChat)
	}
	if err := memory.ValidateOwner(req.User); err != nil {
		return "", err
	}
	if req.Path != "" {
		if _, err := memory.ParsePath(req.Path); err != nil {
			return "", err
		}
	}
	a.env.logger.Info("control: forget requested by mnemo memory forget", "user", req.User, "path", req.Path)
	ctx, cancel := context.WithTimeout(ctx, forgetWait)
	defer cancel()
	d, err := a.data.Forget(ctx, userdata.Request{Owner: req.User, Path: req.Path, KeepHistory: req.KeepHistory})
	if req.Path == "" && errors.Is(err, memory.ErrNotFound) {
		err = nil
	}
	if err != nil {
		return "", err
	}
	return d.String(), nil
}
