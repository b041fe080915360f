package main

import (
	"context"
	"errors"
)

// runChat is `mnemo chat [--user NAME]`. Placeholder: the terminal chat
// replaces it. args are the words after "chat" with the global flags taken
// out; parse them with newFlagSet("chat") and parseArgs.
func runChat(ctx context.Context, env *cliEnv, cfg *Config, args []string) error {
	return errors.New("chat: not implemented yet")
}
