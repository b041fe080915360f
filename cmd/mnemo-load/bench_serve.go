package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/mnemo-agent/mnemo/agent/clock"
	"github.com/mnemo-agent/mnemo/agent/fake"
	"github.com/mnemo-agent/mnemo/bots/discord/discordtest"
	"github.com/mnemo-agent/mnemo/bots/slack/slacktest"
)

// readyTimeout bounds how long serve may take to connect both adapters.
const readyTimeout = time.Minute

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

func slackUserID(u int) string { return fmt.Sprintf("U%08d", u+1) }
func slackDM(u int) string     { return fmt.Sprintf("D%08d", u+1) }

// serveFigures is `mnemo serve`'s start and memory.
type serveFigures struct {
	Ready   Latency // exec → Slack connected and Discord's /memory registered, ms
	IdleRSS int64   // peak RSS once ready, before any message
	LoadRSS int64   // peak RSS after every row
	Users   int     // users linked, 20 memory files each
}

// serveRun starts `mnemo serve` with the Slack and the Discord adapter
// against the fakes, every user linked on both to a seeded memory of 20
// files, and sends, for each n of users, messages messages from each of n
// users at once, first over Slack, then over Discord.
func (b *bencher) serveRun(ctx context.Context, users []int, messages, starts int) (*serveFigures, []concFigures, error) {
	most := 0
	for _, n := range users {
		most = max(most, n)
	}
	dir, mem, err := b.serveDir(ctx, most)
	if err != nil {
		return nil, nil, err
	}

	m := newBenchModel(0)
	defer m.close()
	tb := &fakeHost{log: discardLogger()}
	defer tb.cleanup()
	slk, dsc, err := startServeFakes(tb, most)
	if err != nil {
		return nil, nil, err
	}
	// mnemo's web API calls go through a proxy that tells when a reply
	// was posted: asking the fakes on every change would copy all their
	// records under their lock, slowing down what is measured.
	slackWait, err := newPostWatch(slk.URL(), most, slackPost)
	if err != nil {
		return nil, nil, err
	}
	defer slackWait.close()
	discordWait, err := newPostWatch(dsc.URL(), most, discordPost)
	if err != nil {
		return nil, nil, err
	}
	defer discordWait.close()
	env := childEnv(dir, "OPENAI_BASE_URL="+m.srv.URL(), "OPENAI_API_KEY=sk-bench", "MNEMO_DATA_DIR="+mem,
		"SLACK_BOT_TOKEN="+slacktest.DefaultBotToken, "SLACK_APP_TOKEN="+slacktest.DefaultAppToken, "SLACK_API_URL="+slackWait.url()+"/api/",
		"DISCORD_BOT_TOKEN="+dsc.Options().Token, "DISCORD_API_URL="+discordWait.url()+"/")

	sv, readies, err := b.startServes(ctx, dir, env, slk, dsc, starts)
	if err != nil {
		return nil, nil, err
	}
	defer func() { _ = sv.stop() }() // on an early return; once stopped below, a no-op
	pid := sv.cmd.Process.Pid
	if err := settle(ctx, pid); err != nil { // the history baseline of every user's files, say
		return nil, nil, err
	}
	sf := &serveFigures{Ready: distribution(readies), IdleRSS: vmHWM(pid), Users: most}

	paths := []servePath{
		{"Slack", func(u, i int) {
			slk.Message(slacktest.MessageEvent{Channel: slackDM(u), ChannelType: "im", User: slackUserID(u), Text: messageText(i, messages)})
		}, slackWait},
		{"Discord", func(u, i int) {
			dsc.MessageCreate(discordgo.Message{ChannelID: dmChannelID(u), Content: messageText(i, messages), Author: discordAuthor(u)})
		}, discordWait},
	}
	var rows []concFigures
	for _, p := range paths {
		for _, n := range users {
			f, err := measureServe(ctx, m, sv, p, n, messages)
			if err != nil {
				return nil, nil, err
			}
			rows = append(rows, f)
		}
	}
	sf.LoadRSS = vmHWM(pid)
	if err := sv.stop(); err != nil {
		return nil, nil, err
	}
	if err := tb.err(); err != nil {
		return nil, nil, fmt.Errorf("fakes: %w", err)
	}
	return sf, rows, nil
}

// serveDir makes serve's data folder: a seeded memory of 20 files for
// each of most users, and a mnemo.yaml linking each user's Slack and
// Discord identities. mem is the memory folder.
func (b *bencher) serveDir(ctx context.Context, most int) (dir, mem string, err error) {
	dir, err = b.fresh("serve")
	if err != nil {
		return "", "", err
	}
	mem = filepath.Join(dir, "data", "memory")
	if err := seed(ctx, mem, most, 20, time.Now()); err != nil {
		return "", "", err
	}
	// The limits are off: the bench measures what a message costs, and a
	// person linked on both platforms sends every row's messages (3 rows
	// of 5 on each) within a minute, past limits.messagesPerMinute: the
	// refused ones would get no reply, and the row would wait for it.
	var cfg strings.Builder
	cfg.WriteString("limits:\n  messagesPerMinute: 0\n  tokensPerDay: 0\n")
	cfg.WriteString("identities:\n")
	for u := range most {
		fmt.Fprintf(&cfg, "  %s: [\"slack:%s/%s\", \"discord:%s\"]\n", userName(u), slacktest.DefaultTeamID, slackUserID(u), discordUserID(u))
	}
	if err := os.WriteFile(filepath.Join(dir, "mnemo.yaml"), []byte(cfg.String()), 0o600); err != nil {
		return "", "", err
	}
	return dir, mem, nil
}

// startServeFakes starts the fake Slack and the fake Discord on tb, each
// knowing most users and their DM channels.
func startServeFakes(tb *fakeHost, most int) (*slacktest.Server, *discordtest.Server, error) {
	var slk *slacktest.Server
	var dsc *discordtest.Server
	if err := tb.start(func(t fake.T) {
		slk = slacktest.New(t, slacktest.Options{})
		dsc = discordtest.New(t, discordtest.Options{})
	}); err != nil {
		return nil, nil, fmt.Errorf("fakes: %w", err)
	}
	for u := range most {
		slk.SetUser(slacktest.User{ID: slackUserID(u), TeamID: slacktest.DefaultTeamID, Name: fmt.Sprintf("load%04d", u+1), RealName: displayName(u)})
		dsc.AddChannel(discordgo.Channel{ID: dmChannelID(u), Type: discordgo.ChannelTypeDM, Recipients: []*discordgo.User{discordAuthor(u)}})
	}
	return slk, dsc, nil
}

// startServes times serve's start-up to ready, starts times: the first
// start on this memory, then restarts (the state folder as the previous
// run left it). The last one is returned running.
func (b *bencher) startServes(ctx context.Context, dir string, env []string, slk *slacktest.Server, dsc *discordtest.Server, starts int) (*serveProc, []time.Duration, error) {
	var readies []time.Duration
	var sv *serveProc
	for i := range starts {
		var err error
		sv, err = b.startServe(ctx, dir, env, slk, dsc)
		if err != nil {
			return nil, nil, err
		}
		readies = append(readies, sv.ready)
		if i < starts-1 {
			if err := sv.stop(); err != nil {
				return nil, nil, err
			}
		}
	}
	return sv, readies, nil
}

// servePath is a way in to serve: send posts user u's message i on a
// platform, watch sees the replies.
type servePath struct {
	name  string
	send  func(u, i int)
	watch *postWatch
}

// measureServe is one row: messages messages from each of n users at
// once over p, each user sending the next once the last is answered.
func measureServe(ctx context.Context, m *benchModel, sv *serveProc, p servePath, n, messages int) (concFigures, error) {
	m.reset()
	pid := sv.cmd.Process.Pid
	f := concFigures{Path: p.name, Users: n}
	cpu0 := procCPU(pid)
	lat := make([][]time.Duration, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	t0 := time.Now()
	for u := range n {
		wg.Go(func() {
			for i := range messages {
				s := time.Now()
				p.send(u, i)
				if err := p.watch.wait(ctx, u); err != nil {
					errs[u] = err
					return
				}
				lat[u] = append(lat[u], time.Since(s))
			}
		})
	}
	wg.Wait()
	wall := time.Since(t0)
	for u, err := range errs {
		if err != nil {
			return f, fmt.Errorf("%s, user %d: %w: %s", p.name, u+1, err, sv.stderr)
		}
	}
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	f.Messages = len(all)
	f.CPUPerMsg = (procCPU(pid) - cpu0) / time.Duration(f.Messages)
	f.Wall = distribution(all)
	f.PerSecond = float64(f.Messages) / wall.Seconds()
	f.CallsPerMsg = float64(m.thinker.Load()) / float64(f.Messages)
	f.PeakRSS = vmHWM(pid)
	return f, nil
}

// userOf is the user of a DM channel id made by slackDM or dmChannelID.
func userOf(channel, prefix string) (int, bool) {
	rest, ok := strings.CutPrefix(channel, prefix)
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(rest) // base 10: the ids are zero-padded
	if err != nil || n < 1 {
		return 0, false
	}
	return n - 1, true
}

// postWatch is a reverse proxy on 127.0.0.1 in front of a fake's web
// API: it passes every call on and, when a message post into a user's DM
// channel was answered 2xx, tells that user's waiter.
type postWatch struct {
	srv     *httptest.Server
	replies []chan struct{}
}

// postMatch says whether a call is a message post and into which user's
// DM channel.
type postMatch func(r *http.Request, body []byte) (user int, ok bool)

func newPostWatch(target string, users int, match postMatch) (*postWatch, error) {
	to, err := url.Parse(target)
	if err != nil {
		return nil, fmt.Errorf("fake's URL: %w", err)
	}
	w := &postWatch{replies: make([]chan struct{}, users)}
	for u := range w.replies {
		w.replies[u] = make(chan struct{}, 1024)
	}
	proxy := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(to) }}
	w.srv = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		u, post := -1, false
		if r.Method == http.MethodPost {
			body, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(rw, err.Error(), http.StatusBadRequest)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			u, post = match(r, body)
		}
		rec := &statusRecorder{ResponseWriter: rw, status: http.StatusOK}
		proxy.ServeHTTP(rec, r)
		if post && u < users && rec.status/100 == 2 {
			w.replies[u] <- struct{}{}
		}
	}))
	return w, nil
}

func (w *postWatch) url() string { return w.srv.URL }
func (w *postWatch) close()      { w.srv.Close() }

// wait waits for user u's next reply.
func (w *postWatch) wait(ctx context.Context, u int) error {
	select {
	case <-w.replies[u]:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// statusRecorder keeps the status a handler wrote; Unwrap lets the
// proxy reach the connection for a WebSocket upgrade.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// slackPost matches chat.postMessage into a DM channel made by slackDM
// (form-encoded, as slack-go sends it, or JSON).
func slackPost(r *http.Request, body []byte) (int, bool) {
	if !strings.HasSuffix(r.URL.Path, "/chat.postMessage") {
		return 0, false
	}
	channel := ""
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		var v struct {
			Channel string `json:"channel"`
		}
		_ = json.Unmarshal(body, &v)
		channel = v.Channel
	} else if q, err := url.ParseQuery(string(body)); err == nil {
		channel = q.Get("channel")
	}
	return userOf(channel, "D")
}

// discordPost matches POST /api/v9/channels/{id}/messages into a DM
// channel made by dmChannelID.
func discordPost(r *http.Request, _ []byte) (int, bool) {
	rest, ok := strings.CutPrefix(r.URL.Path, "/api/v9/channels/")
	if !ok {
		return 0, false
	}
	channel, ok := strings.CutSuffix(rest, "/messages")
	if !ok {
		return 0, false
	}
	return userOf(channel, "6")
}

// serveProc is a running `mnemo serve`.
type serveProc struct {
	cmd     *exec.Cmd
	stderr  *tailBuffer
	exited  chan error
	stopped bool
	ready   time.Duration // exec → ready
}

// startServe starts `mnemo serve` in dir and returns once it is ready:
// Slack's socket connected and Discord's /memory registered (once more
// than before it started), as the fakes tell on every change.
func (b *bencher) startServe(ctx context.Context, dir string, env []string, slk *slacktest.Server, dsc *discordtest.Server) (*serveProc, error) {
	return b.startServeListen(ctx, dir, env, "127.0.0.1:0", slk, dsc)
}

// startServeListen is startServe with /metrics, /healthz and /readyz on
// listen.
func (b *bencher) startServeListen(ctx context.Context, dir string, env []string, listen string, slk *slacktest.Server, dsc *discordtest.Server) (*serveProc, error) {
	conns, sets := slk.Connections(), len(dsc.CommandSets())
	p := &serveProc{cmd: execCommand(ctx, b.bin, dir, env, "serve", "--listen", listen), stderr: &tailBuffer{max: 4096}, exited: make(chan error, 1)}
	p.cmd.Stderr = p.stderr
	t0 := time.Now()
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start mnemo serve: %w", err)
	}
	go func() { p.exited <- p.cmd.Wait() }()
	wait := cmp.Or(b.readyWait, readyTimeout)
	timeout := clock.Or(b.clock).NewTimer(wait)
	defer timeout.Stop()
	for {
		sch, dch := slk.Changed(), dsc.Changed()
		slackUp, discordUp := slk.Connections() > conns, len(dsc.CommandSets()) > sets
		if slackUp && discordUp {
			p.ready = time.Since(t0)
			return p, nil
		}
		select {
		case <-sch:
		case <-dch:
		case err := <-p.exited:
			p.stopped = true
			if ctx.Err() != nil { // killed for it
				return nil, context.Cause(ctx)
			}
			return nil, fmt.Errorf("mnemo serve exited before it was ready (%v): %s", err, p.stderr)
		case <-timeout.C():
			_ = p.stop()
			return nil, fmt.Errorf("mnemo serve was not ready (Slack connected: %v, Discord's /memory registered: %v) after %v: %s",
				slackUp, discordUp, wait, p.stderr)
		case <-ctx.Done():
			_ = p.stop()
			return nil, context.Cause(ctx)
		}
	}
}

// stop ends serve with SIGTERM, as an operator would, and waits for it
// (a minute at most, then SIGKILL).
func (p *serveProc) stop() error {
	if p.stopped {
		return nil
	}
	p.stopped = true
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.exited:
		if err != nil {
			return fmt.Errorf("mnemo serve: %w: %s", err, p.stderr)
		}
		return nil
	case <-time.After(time.Minute):
		_ = p.cmd.Process.Kill()
		<-p.exited
		return fmt.Errorf("mnemo serve did not stop within a minute of SIGTERM: %s", p.stderr)
	}
}
