package main

import (
	"context"
	"errors"
)

// runServe is `mnemo serve`. Placeholder: the Slack and Discord adapters
// replace it. args are the words after "serve" with the global flags
// (--listen is already in cfg.Server.Listen) taken out.
func runServe(ctx context.Context, env *cliEnv, cfg *Config, args []string) error {
	return errors.New("serve: not implemented yet")
}
