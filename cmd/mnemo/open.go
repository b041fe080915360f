package main

import (
	"context"
	"time"

	"github.com/mnemo-agent/mnemo/cmd/internal/app"
	"github.com/mnemo-agent/mnemo/cmd/internal/config"
	"github.com/mnemo-agent/mnemo/cmd/internal/state"
	memhistory "github.com/mnemo-agent/mnemo/memory/history"
)

// appOptions are what the app is opened with, from the process.
func appOptions(env *cliEnv, cfg *config.Config) app.Options {
	return app.Options{Config: cfg, Logger: env.logger, Notes: env.stderr,
		OllamaURL: env.getenv("MNEMO_OLLAMA_URL"), Faults: env.faults, Now: env.now,
		Platforms: env.registered()}
}

// settleLLM is app.SettleLLM for a command: a note goes to stderr.
func settleLLM(ctx context.Context, env *cliEnv, cfg *config.Config) (*config.Config, error) {
	return app.SettleLLM(ctx, cfg, env.getenv("MNEMO_OLLAMA_URL"), env.stderr)
}

// openApp opens the app of chat and serve (app.Open), with every
// registered platform (bots/registry; env.registered).
func openApp(ctx context.Context, env *cliEnv, cfg *config.Config) (*app.App, error) {
	return app.Open(ctx, appOptions(env, cfg))
}

// openState opens the state folder (app.OpenState); a failure exits 1.
func openState(env *cliEnv, dir string) (*state.State, error) {
	var st *state.State
	var err error
	if env != nil {
		st, err = app.OpenState(dir, env.logger)
	} else {
		st, err = app.OpenState(dir, nil)
	}
	if err != nil {
		return nil, failure(err)
	}
	return st, nil
}

// openHistory opens the history of the memory files (app.OpenHistory); a
// failure exits 1.
func openHistory(cfg *config.Config, now func() time.Time) (*memhistory.Store, error) {
	h, err := app.OpenHistory(cfg, now)
	if err != nil {
		return nil, failure(err)
	}
	return h, nil
}
