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

	"github.com/mnemo-agent/mnemo/bots/access"
	discordbot "github.com/mnemo-agent/mnemo/bots/discord"
	slackbot "github.com/mnemo-agent/mnemo/bots/slack"
	"github.com/mnemo-agent/mnemo/cmd/internal/app"
	"github.com/mnemo-agent/mnemo/cmd/internal/config"
	"github.com/mnemo-agent/mnemo/cmd/internal/state"
	"github.com/mnemo-agent/mnemo/cmd/internal/userdata"
	"github.com/mnemo-agent/mnemo/cmd/internal/wiring"
)

// adapter is a chat platform front end that serve runs.
type adapter interface {
	// Run serves until ctx is cancelled (then finishes the tasks it
	// started and returns nil) or it cannot go on (an error).
	Run(ctx context.Context) error
	// Ready reports whether it is connected and taking messages.
	Ready() bool
	// Forget drops user's messages waiting for an answer and returns how
	// many: a forget drops them first (userdata), so that none becomes a
	// turn after the user's turns were dropped.
	Forget(user string) int
}

type namedAdapter struct {
	name string
	adapter
}

// buildAdapters makes the adapters that have tokens.
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
	if !cfg.SlackEnabled() && !cfg.DiscordEnabled() {
		return configError(errors.New("serve: no chat platform has tokens: set SLACK_BOT_TOKEN (xoxb-...) and SLACK_APP_TOKEN (xapp-...) to run the Slack adapter (see bots/README.md, \"Slack\"), and/or DISCORD_BOT_TOKEN to run the Discord adapter (see bots/README.md, \"Discord\"); to chat in the terminal, use mnemo chat"))
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
	adapters, err := build(env, cfg, a)
	if err != nil {
		return stop(err)
	}
	useAdapterQueues(a, adapters)
	ctl, err := a.ListenControl()
	if err != nil {
		return stop(failure(err))
	}
	ready := newReadiness(filepath.Join(app.StateDir(cfg), "intake"), env.faults, env.logger)
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

// useAdapterQueues hands the adapters' waiting messages to the app: their
// Forget for a forget, their queue length (when they have one) for /metrics.
func useAdapterQueues(a *app.App, adapters []namedAdapter) {
	live := map[string]func(user string) int{}
	for _, ad := range adapters {
		if q, ok := ad.adapter.(interface{ Queued() int }); ok {
			a.Metrics().QueueSource(ad.name, q.Queued)
		}
		live[ad.name] = ad.Forget
	}
	journals := platformJournals(live)
	for _, ad := range adapters { // a platform without an intake journal (tests)
		if ad.name != "slack" && ad.name != "discord" {
			journals = append(journals, userdata.Journal{Platform: ad.name, Live: ad.Forget})
		}
	}
	a.UseJournals(journals)
}

// platformJournals are the platforms' intake journals as a forget finds
// them: live names the running adapters' Forget by platform.
func platformJournals(live map[string]func(user string) int) []userdata.Journal {
	return []userdata.Journal{
		{Platform: "slack", Live: live["slack"], File: slackbot.ForgetQueued},
		{Platform: "discord", Live: live["discord"], File: discordbot.ForgetQueued},
	}
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

// platformAdapters builds the Slack adapter when both its tokens are set
// and the Discord adapter when its token is; both run in this process and
// share the agent, so linked identities share one memory. Each journals
// the messages it takes in <state>/intake/ before acknowledging them, so a
// crash loses none (each adapter has Forget(user) int for a forget).
func platformAdapters(env *cliEnv, cfg *config.Config, a *app.App) ([]namedAdapter, error) {
	var out []namedAdapter
	intakeDir := filepath.Join(app.StateDir(cfg), "intake")
	if err := checkStateFolder(a.State(), "intake"); err != nil {
		return nil, failure(fmt.Errorf("intake journal: %w", err))
	}
	if cfg.SlackEnabled() {
		gate, err := accessGate(a, access.Slack)
		if err != nil {
			return nil, err
		}
		bot, err := slackbot.New(slackbot.Config{Access: gate,
			BotToken: cfg.Slack.BotToken, AppToken: cfg.Slack.AppToken, APIURL: cfg.Slack.APIURL,
			ChannelMemory: cfg.Slack.ChannelMemory, Identities: cfg.IdentityIndex(),
			Handler: a.PlatformHandler(), Memory: a.Platform(), Logger: env.logger.With("adapter", "slack"), IntakeDir: intakeDir,
			FirstVisible: func(d time.Duration) { a.Metrics().FirstVisible("slack", d) },
			Budget:       a.Budget(), Refusals: a.Metrics(),
		})
		if err != nil {
			return nil, configError(err)
		}
		out = append(out, namedAdapter{"slack", bot})
	}
	if cfg.DiscordEnabled() {
		d := cfg.Discord
		gate, err := accessGate(a, access.Discord)
		if err != nil {
			return nil, err
		}
		bot, err := discordbot.New(discordbot.Config{Access: gate,
			Token: d.BotToken, APIURL: d.APIURL, ChannelMemory: d.ChannelMemory,
			GuildIDs: d.GuildIDs, ShardID: d.ShardID, ShardCount: d.ShardCount, ReplyMention: d.ReplyMention,
			Identities: cfg.IdentityIndex(), Handler: a.PlatformHandler(), Memory: a.Platform(), Logger: env.logger.With("adapter", "discord"),
			IntakeDir: intakeDir, FirstVisible: func(d time.Duration) { a.Metrics().FirstVisible("discord", d) },
			Budget: a.Budget(), Refusals: a.Metrics(),
		})
		if err != nil {
			return nil, configError(err)
		}
		out = append(out, namedAdapter{"discord", bot})
	}
	return out, nil
}

// accessGate is platform's access check (app.AccessGate).
func accessGate(a *app.App, platform string) (*access.Gate, error) {
	note := ""
	if platform == access.Discord {
		note = "discord: discord.access is open: anyone who can reach the bot may talk to it; a bot in a public server needs discord.access allowlist or pairing"
	}
	g, err := a.AccessGate(platform, platform == access.Slack, note)
	var ce *app.ConfigError
	if errors.As(err, &ce) {
		return nil, configError(err)
	}
	if err != nil {
		return nil, failure(err)
	}
	return g, nil
}

// checkStateFolder makes the state folder's subfolder name (0700) when
// it is missing, and refuses one that a link leads out of the state folder.
func checkStateFolder(st *state.State, name string) error {
	r, err := st.Sub(name)
	if err != nil {
		return err
	}
	return r.Close()
}
