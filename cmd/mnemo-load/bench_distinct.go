package main

// The distinct-users part of -bench: one DM from each of N people mnemo
// has never seen, through the fake Slack, to one `mnemo serve`, while the
// bench samples the child's open files, goroutines and RSS. What it shows
// is whether those grow with the number of people (a handle, a goroutine
// or a journal file kept per person) or stay flat (bounded by design).

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mnemo-agent/mnemo/agent/openaitest"
	"github.com/mnemo-agent/mnemo/bots/slack/slacktest"
)

// distinctFigures is one step of the distinct-users run: the figures once
// Users people in all had sent their DM and their turns were reflected.
type distinctFigures struct {
	Users          int   // people so far, one DM each
	PeakFDs        int   // most open files seen in the step (/proc/<pid>/fd)
	PeakGoroutines int   // most goroutines seen in the step (go_goroutines)
	AfterFDs       int   // open files once every turn of the step was reflected
	AfterGorout    int   // goroutines then
	PeakRSS        int64 // VmHWM at the end of the step
	Folders        int   // memory folders made (one per person whose reflection wrote)
	Wall           time.Duration
}

// distinctSample is the largest open files and goroutines seen since the
// last reset, by the sampler.
type distinctSample struct {
	mu         sync.Mutex
	fds, gor   int
	lastErr    error
	samples    int
	metricsURL string
	pid        int
	client     *http.Client
}

func (s *distinctSample) reset() {
	s.mu.Lock()
	s.fds, s.gor, s.samples = 0, 0, 0
	s.mu.Unlock()
}

func (s *distinctSample) peaks() (fds, gor int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fds, s.gor
}

// take reads the child's open files and goroutines once and keeps the
// largest.
func (s *distinctSample) take(ctx context.Context) (fds, gor int, err error) {
	fds = openFDs(s.pid)
	m, err := scrape(ctx, s.client, s.metricsURL)
	if err != nil {
		s.mu.Lock()
		s.lastErr = err
		s.mu.Unlock()
		return fds, 0, err
	}
	gor = int(m["go_goroutines"])
	s.mu.Lock()
	s.fds, s.gor = max(s.fds, fds), max(s.gor, gor)
	s.samples++
	s.mu.Unlock()
	return fds, gor, nil
}

// run samples every interval until ctx ends.
func (s *distinctSample) run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		_, _, _ = s.take(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// openFDs counts the entries of /proc/<pid>/fd; -1 when it cannot be read.
func openFDs(pid int) int {
	d, err := os.Open(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return -1
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return -1
	}
	return len(names)
}

// scrape reads the unlabelled series of a Prometheus text page (and the
// labelled ones under their whole name, labels included).
func scrape(ctx context.Context, client *http.Client, url string) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", url, resp.Status)
	}
	return parseMetrics(resp.Body)
}

func parseMetrics(r io.Reader) (map[string]float64, error) {
	out := map[string]float64{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		out[line[:i]] = v
	}
	return out, sc.Err()
}

// freeAddr is an address on 127.0.0.1 free a moment ago, for serve's
// /metrics.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// distinctUsers runs the steps (people in all, growing) on one `mnemo
// serve` with the Slack adapter against the fake Slack: each step sends
// one DM from each new person, conc people at a time, each waiting for
// its reply, then waits for every turn to be reflected (reflector.idle is
// idle, so a step's people are all pending reflection together once it
// is longer than the sending), sampling the child meanwhile.
func (b *bencher) distinctUsers(ctx context.Context, steps []int, conc int, idle time.Duration) ([]distinctFigures, error) {
	most := 0
	for _, n := range steps {
		most = max(most, n)
	}
	dir, err := b.fresh("distinct")
	if err != nil {
		return nil, err
	}
	mem := filepath.Join(dir, "data", "memory")
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	cfg := fmt.Sprintf("reflector:\n  idle: %s\nlog:\n  level: warn\n", idle)
	if err := os.WriteFile(filepath.Join(dir, "mnemo.yaml"), []byte(cfg), 0o600); err != nil {
		return nil, err
	}

	srv := openaitest.NewServer()
	defer srv.Close()
	model := newFakeModel(srv, 0) // the reflector appends an episode: each person gets a folder
	srv.Handle(model.reply)
	tb := &fakeHost{log: discardLogger()}
	defer tb.cleanup()
	slk, dsc, err := startServeFakes(tb, most)
	if err != nil {
		return nil, err
	}
	watch, err := newPostWatch(slk.URL(), most, slackPost)
	if err != nil {
		return nil, err
	}
	defer watch.close()
	env := childEnv(dir, "OPENAI_BASE_URL="+srv.URL(), "OPENAI_API_KEY=sk-bench", "MNEMO_DATA_DIR="+mem,
		"SLACK_BOT_TOKEN="+slacktest.DefaultBotToken, "SLACK_APP_TOKEN="+slacktest.DefaultAppToken, "SLACK_API_URL="+watch.url()+"/api/",
		"DISCORD_BOT_TOKEN="+dsc.Options().Token, "DISCORD_API_URL="+strings.TrimSuffix(dsc.URL(), "/")+"/")
	sv, err := b.startServeListen(ctx, dir, env, addr, slk, dsc)
	if err != nil {
		return nil, err
	}
	defer func() { _ = sv.stop() }()
	pid := sv.cmd.Process.Pid
	if err := settle(ctx, pid); err != nil {
		return nil, err
	}
	smp := &distinctSample{pid: pid, metricsURL: "http://" + addr + "/metrics", client: &http.Client{Timeout: 10 * time.Second}}
	sctx, stopSampling := context.WithCancel(ctx)
	defer stopSampling()
	if _, _, err := smp.take(ctx); err != nil {
		return nil, fmt.Errorf("serve's /metrics: %w", err)
	}
	go smp.run(sctx, 20*time.Millisecond)

	var out []distinctFigures
	from := 0
	for _, n := range steps {
		if n <= from {
			continue
		}
		b.progress("distinct users: %d to %d, %d at a time", from+1, n, conc)
		smp.reset()
		t0 := time.Now()
		if err := sendDistinct(ctx, slk, watch, from, n, conc); err != nil {
			return nil, fmt.Errorf("%w: %s", err, sv.stderr)
		}
		if err := waitReflected(ctx, smp, sv); err != nil {
			return nil, err
		}
		f := distinctFigures{Users: n, Wall: time.Since(t0)}
		f.PeakFDs, f.PeakGoroutines = smp.peaks()
		f.AfterFDs, f.AfterGorout, _ = smp.take(ctx)
		f.PeakRSS = vmHWM(pid)
		f.Folders = countFolders(mem)
		out = append(out, f)
		from = n
	}
	stopSampling()
	if err := sv.stop(); err != nil {
		return nil, err
	}
	if err := tb.err(); err != nil {
		return nil, fmt.Errorf("fakes: %w", err)
	}
	return out, nil
}

// sendDistinct sends one DM from each of the people from to n-1, conc at
// a time, each waiting for its reply.
func sendDistinct(ctx context.Context, slk *slacktest.Server, watch *postWatch, from, n, conc int) error {
	next := make(chan int)
	errs := make(chan error, conc)
	var wg sync.WaitGroup
	for range conc {
		wg.Go(func() {
			for u := range next {
				slk.Message(slacktest.MessageEvent{Channel: slackDM(u), ChannelType: "im", User: slackUserID(u), Text: "hello, I am new here"})
				if err := watch.wait(ctx, u); err != nil {
					errs <- fmt.Errorf("person %d: no reply: %w", u+1, err)
					return
				}
			}
		})
	}
	var err error
feed:
	for u := from; u < n; u++ {
		select {
		case next <- u:
		case err = <-errs:
			break feed
		case <-ctx.Done():
			err = context.Cause(ctx)
			break feed
		}
	}
	close(next)
	wg.Wait()
	if err == nil {
		select {
		case err = <-errs:
		default:
		}
	}
	return err
}

// waitReflected waits until serve's journal has no turn pending.
func waitReflected(ctx context.Context, smp *distinctSample, sv *serveProc) error {
	for {
		m, err := scrape(ctx, smp.client, smp.metricsURL)
		if err == nil && m["mnemo_journal_pending_turns"] == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for the reflections: %w: %s", context.Cause(ctx), sv.stderr)
		case err := <-sv.exited:
			sv.stopped = true
			return fmt.Errorf("mnemo serve exited (%v): %s", err, sv.stderr)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// countFolders counts the folders in the memory root.
func countFolders(mem string) int {
	entries, err := os.ReadDir(mem)
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range entries {
		if e.IsDir() {
			n++
		}
	}
	return n
}
