package main

import (
	"context"
	"errors"

	"github.com/mnemo-agent/mnemo/cmd/internal/userdata"
	"github.com/mnemo-agent/mnemo/memory"
)

// showInChat is /memory in the terminal chat (userdata.Service.ShowChat).
func (a *app) showInChat(user string) (string, error) { return a.data.ShowChat(user) }

// forgetInChat is /forget yes in the terminal chat: everything about the
// user, as `mnemo memory forget USER --yes` does.
func (a *app) forgetInChat(user string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), forgetWait)
	defer cancel()
	d, err := a.data.Forget(ctx, userdata.Request{Owner: user})
	if errors.Is(err, memory.ErrNotFound) {
		return "There was nothing to forget: I don't remember anything about you.", nil
	}
	if err != nil {
		return "", err
	}
	msg := "Done: I have forgotten everything about you, " + user + "."
	if s := d.String(); s != "" {
		msg += " (Also " + s + ".)"
	}
	return msg, nil
}
