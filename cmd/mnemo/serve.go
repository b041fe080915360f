package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"github.com/mnemo-agent/mnemo/bots/platform"
	"github.com/mnemo-agent/mnemo/cmd/internal/app"
	"github.com/mnemo-agent/mnemo/cmd/internal/config"
	"github.com/mnemo-agent/mnemo/cmd/internal/wiring"
)

// adapter is a chat platform front end that serve runs
// (bots/platform.Adapter).
type adapter = platform.Adapter

// namedAdapter is a running adapter by its platform's name.
type namedAdapter struct {
	name string
	adapter
}

// appAdapters are adapters as the app takes them.
func appAdapters(ads []namedAdapter) []app.Adapter {
	out := make([]app.Adapter, len(ads))
	for i, ad := range ads {
		out[i] = app.Adapter{Name: ad.name, Adapter: ad.adapter}
	}
	return out
}

// buildAdapters makes the adapters serve runs: platformAdapters, or a
// test's fakes.
type buildAdapters func(env *cliEnv, cfg *config.Config, a *app.App) ([]namedAdapter, error)

// serveFlags returns runServe: serve has no flags of its own.
func serveFlags(*flag.FlagSet) (runner, string) { return runServe, "" }

// runServe is `mnemo serve`: it runs the adapters that have tokens, serves
// /healthz and /readyz on server.listen and the control socket in the state
// folder. At the first SIGTERM or SIGINT it stops taking messages and gives
// running tasks and reflections shutdown.grace to finish, then cancels
// their model calls (unfinished reflections stay journaled) and returns
// nil; at a second signal it stops at once (exit 130).
func runServe(ctx context.Context, env *cliEnv, cfg *config.Config, args []string) error {
	return serveWith(ctx, env, cfg, args, nil, platformAdapters)
}

func serveWith(ctx context.Context, env *cliEnv, cfg *config.Config, args []string, ln net.Listener, build buildAdapters) error {
	if len(args) > 0 {
		return usageError("serve: unexpected argument %q; usage: mnemo serve", args[0])
	}
	if len(app.Enabled(cfg, env.registered())) == 0 {
		return configError(app.NoPlatform(env.registered()))
	}
	cfg, err := settleLLM(ctx, env, cfg) // before anything is created
	if err != nil {
		return err
	}
	// One owner per data folder, taken before the address (a second serve
	// is told who runs, not that the port is busy) and before the reflector
	// replays the journal.
	lock, err := lockData(env, cfg, "mnemo serve")
	if err != nil {
		return err
	}
	defer lock.Close()
	if ln == nil {
		if ln, err = net.Listen("tcp", cfg.Server.Listen); err != nil {
			return failure(fmt.Errorf("serve: cannot listen on %s for /healthz and /readyz: %w; set server.listen or --listen to a free address", cfg.Server.Listen, err))
		}
	}
	defer ln.Close()
	a, err := openApp(ctx, env, cfg)
	if err != nil {
		return err
	}
	a.StartBaseline("")
	sd := newShutdown(signals{stop: ctx, abort: env.abort}, cfg.Shutdown.Grace, env.logger, a.CancelCalls)
	defer sd.release()
	// stop ends what was opened so far: the grace bounds the reflections of
	// turns the journal replayed.
	stop := func(err error) error {
		sd.begin()
		a.Close(sd.hard)
		return err
	}
	// The registered platforms' adapters: those with tokens, and the
	// terminal, which second chats on this data folder talk to through the
	// control socket.
	adapters, err := build(env, cfg, a)
	if err != nil {
		return stop(err)
	}
	a.UseAdapters(appAdapters(adapters))
	ctl, err := a.ListenControl()
	if err != nil {
		return stop(failure(err))
	}
	ready := newReadiness(filepath.Join(cfg.State.Dir, "intake"), env.faults, env.logger)
	httpSrv := &http.Server{Handler: healthMux(ctx, a, sd, adapters, ready), ReadHeaderTimeout: 5 * time.Second}
	go httpSrv.Serve(ln)
	names, fronts := frontends(adapters)
	env.logger.Info("serve: running", "adapters", names, "listen", ln.Addr().String(), "control", ctl.Path())

	// The shutdown order (wiring): the adapters stop taking messages and
	// finish the tasks they took, then the reflector drains and the store
	// closes (a.Close), all within the grace sd started.
	firstErr := wiring.RunFrontends(ctx, sd.begin, fronts...)
	env.logger.Info("serve: adapters stopped; waiting for reflections", "pending", a.Pending())
	// Forgets in progress finish first; later ones are refused (the CLI
	// says to run it again, and does it itself once this process is gone).
	ctl.Close(sd.hard)
	closeErr := a.Close(sd.hard)
	stopHTTP(ctx, httpSrv, sd.aborted())
	switch {
	case sd.aborted():
		return abortError()
	case firstErr != nil:
		return failure(firstErr)
	case closeErr != nil:
		return failure(closeErr)
	}
	env.logger.Info("serve: stopped")
	return nil
}

// healthMux serves /metrics, /healthz (the process answers) and /readyz
// (every adapter is connected, messages can be journaled and serve is not
// stopping).
func healthMux(ctx context.Context, a *app.App, sd *shutdown, adapters []namedAdapter, ready *readiness) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", a.Metrics().Handler())
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		var down []string
		for _, ad := range adapters {
			if !ad.Ready() {
				down = append(down, ad.name)
			}
		}
		switch {
		case sd.stopping() || ctx.Err() != nil: // begin runs just after ctx ends
			http.Error(w, "stopping", http.StatusServiceUnavailable)
		case len(down) > 0:
			http.Error(w, "not connected: "+strings.Join(down, ", "), http.StatusServiceUnavailable)
		default:
			if err := ready.check(); err != nil {
				http.Error(w, err.Error(), http.StatusServiceUnavailable)
				return
			}
			fmt.Fprintf(w, "ready; reflections pending: %d\n", a.Pending())
		}
	})
	return mux
}

// frontends are the adapters' names (for the log) and their Run as
// wiring runs them.
func frontends(adapters []namedAdapter) ([]string, []wiring.Frontend) {
	names := make([]string, len(adapters))
	fronts := make([]wiring.Frontend, len(adapters))
	for i, ad := range adapters {
		names[i] = ad.name
		fronts[i] = wiring.Frontend{Name: ad.name, Run: ad.Run}
	}
	return names, fronts
}

// stopHTTP stops the health server: gracefully (5 s at most for the
// requests under way), or at once after a second signal.
func stopHTTP(ctx context.Context, srv *http.Server, aborted bool) {
	if aborted {
		srv.Close()
		return
	}
	shutdownCtx, cancelShutdown := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancelShutdown()
	srv.Shutdown(shutdownCtx)
}

// platformAdapters builds the adapters of the platforms that are turned
// on, and the terminal's (app.Adapters): each platform with tokens
// journals the messages it takes in <state>/intake/ before acknowledging
// them, so a crash loses none.
func platformAdapters(_ *cliEnv, _ *config.Config, a *app.App) ([]namedAdapter, error) {
	ads, err := a.Adapters()
	var ce *app.ConfigError
	switch {
	case errors.As(err, &ce):
		return nil, configError(err)
	case err != nil:
		return nil, failure(err)
	}
	out := make([]namedAdapter, len(ads))
	for i, ad := range ads {
		out[i] = namedAdapter{ad.Name, ad.Adapter}
	}
	return out, nil
}
