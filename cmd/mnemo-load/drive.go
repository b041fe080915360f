package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/agent"
	"github.com/mnemo-agent/mnemo/cmd/internal/turns"
	"github.com/mnemo-agent/mnemo/memory"
)

// driven is what drive measured.
type driven struct {
	latencies []time.Duration // of the tasks that ran
	wall      time.Duration
	failed    atomic.Int64
	quoting   atomic.Int64
}

// turnFunc sends message m (from 0) of user u and waits for the answer,
// counting in d what it sees. It returns false when ctx ended before the
// message was answered.
type turnFunc func(ctx context.Context, d *driven, u, m int) bool

// messageText is the text of message m (from 0) of n.
func messageText(m, n int) string {
	return fmt.Sprintf("Message %d of %d: what is step %d of the deploy checklist for me?", m+1, n, m+1)
}

// directTurn gives the message to the agent as a task.
func directTurn(cfg config, ag *agent.Agent) turnFunc {
	return func(ctx context.Context, d *driven, u, m int) bool {
		reply, err := ag.Handle(ctx, mnemo.Task{
			ID: fmt.Sprintf("%s-%03d", userName(u), m+1), User: userName(u), Platform: "console",
			Speaker: displayName(u), Text: messageText(m, cfg.messages),
		})
		if err != nil { // ctx ended before the task started
			return false
		}
		if reply.Failed {
			d.failed.Add(1)
		}
		if quotes(reply.Text, u) {
			d.quoting.Add(1)
		}
		return true
	}
}

// quotes reports whether a reply quotes user u's facts/user.md.
func quotes(text string, u int) bool { return strings.Contains(text, "- Name: "+displayName(u)) }

// drive sends every user's messages in order on the user's conversation,
// cfg.concurrency tasks (of as many users) at a time, users taking turns
// (see turns.Run), until all are answered or ctx ends.
func drive(ctx context.Context, cfg config, turn turnFunc) *driven {
	d := &driven{}
	lat := make([]time.Duration, cfg.users*cfg.messages)
	ran := make([]bool, len(lat))
	start := time.Now()
	turns.Run(ctx, cfg.concurrency, slices.Repeat([]int{cfg.messages}, cfg.users), func(u, m int) bool {
		t0 := time.Now()
		if !turn(ctx, d, u, m) {
			return false
		}
		i := u*cfg.messages + m
		lat[i], ran[i] = time.Since(t0), true
		return true
	})
	d.wall = time.Since(start)
	for i, ok := range ran {
		if ok {
			d.latencies = append(d.latencies, lat[i])
		}
	}
	return d
}

// distribution is the nearest-rank percentiles and the mean of ds.
func distribution(ds []time.Duration) Latency {
	if len(ds) == 0 {
		return Latency{}
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	at := func(q float64) float64 {
		return ms64(s[max(int(math.Ceil(q*float64(len(s))))-1, 0)])
	}
	var sum time.Duration
	for _, d := range s {
		sum += d
	}
	return Latency{P50: at(0.50), P90: at(0.90), P99: at(0.99), Max: ms64(s[len(s)-1]), Mean: ms64(sum / time.Duration(len(s)))}
}

func ms64(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// countFiles counts every user's memory files and their bytes, as the
// store lists them.
func countFiles(store *memory.Store) (files int, bytes int64, err error) {
	users, err := store.Users()
	if err != nil {
		return 0, 0, err
	}
	for _, name := range users {
		u, err := store.User(name)
		if err != nil {
			return 0, 0, err
		}
		list, err := u.List()
		if err != nil {
			return 0, 0, err
		}
		files += len(list)
		for _, f := range list {
			bytes += f.Size
		}
	}
	return files, bytes, nil
}

// sampler records the peak of the Go heap in use while the load runs.
type sampler struct {
	stopc chan struct{}
	done  chan int64
}

func startSampler() *sampler {
	s := &sampler{stopc: make(chan struct{}), done: make(chan int64)}
	go func() {
		var peak int64
		var ms runtime.MemStats
		t := time.NewTicker(sampleEvery)
		defer t.Stop()
		for {
			runtime.ReadMemStats(&ms)
			peak = max(peak, int64(ms.HeapInuse))
			select {
			case <-t.C:
			case <-s.stopc:
				s.done <- peak
				return
			}
		}
	}()
	return s
}

func (s *sampler) stop() int64 {
	close(s.stopc)
	return <-s.done
}

type cpu struct{ user, sys time.Duration }

func cpuTime() cpu {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return cpu{time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano())}
}

// maxRSS is the process's peak resident set size in bytes.
func maxRSS() int64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return rssBytes(int64(ru.Maxrss), runtime.GOOS)
}

// rssBytes converts getrusage's ru_maxrss to bytes: it is in bytes on
// macOS, in kilobytes on Linux and the BSDs.
func rssBytes(maxrss int64, goos string) int64 {
	if goos == "darwin" || goos == "ios" {
		return maxrss
	}
	return maxrss * 1024
}

// writeOut prints a *Report or a *Comparison as text.
func writeOut(w io.Writer, out any) error {
	if c, ok := out.(*Comparison); ok {
		return writeComparison(w, c)
	}
	return writeText(w, out.(*Report))
}

func writeText(w io.Writer, r *Report) error {
	_, err := io.WriteString(w, reportText(r))
	return err
}

func writeComparison(w io.Writer, c *Comparison) error {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	b.WriteString(reportText(c.Direct))
	b.WriteString("\n")
	b.WriteString(reportText(c.Discord))
	d, x := c.Direct, c.Discord
	p("\nDiscord path against the direct path, the same load in this process (%d and %d tasks):\n", d.Tasks, x.Tasks)
	p("  CPU per message  %+.2f ms (%.2f ms through Discord, %.2f ms direct; whole process, fakes included)\n",
		c.DiscordPathCPUMS, perTaskMS(cpuSeconds(x), x.Tasks), perTaskMS(cpuSeconds(d), d.Tasks))
	if c.FakeDiscordCPUMS != nil {
		p("                   of which the fake Discord %.2f ms (CPU profile labels), mnemo's side %+.2f ms (adapter, discordgo, REST and gateway clients, runtime)\n",
			*c.FakeDiscordCPUMS, *c.MnemoSideCPUMS)
	}
	p("  latency          p50 %s → %s, p99 %s → %s\n", msText(d.LatencyMS.P50), msText(x.LatencyMS.P50), msText(d.LatencyMS.P99), msText(x.LatencyMS.P99))
	p("  tasks/s          %.1f → %.1f\n", d.TasksPerSecond, x.TasksPerSecond)
	_, err := io.WriteString(w, b.String())
	return err
}

// perTaskMS is seconds per task in milliseconds (0 without tasks).
func perTaskMS(seconds float64, tasks int) float64 {
	if tasks == 0 {
		return 0
	}
	return seconds / float64(tasks) * 1000
}

func reportText(r *Report) string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	concurrency := fmt.Sprint(r.Concurrency)
	if r.Conversations < r.Concurrency {
		concurrency += fmt.Sprintf(" (%d at most: one conversation per user)", r.Conversations)
	}
	p("mnemo-load: %d users × %d messages, %d memory files each, concurrency %s, model latency %v, GOMAXPROCS %d\n",
		r.Users, r.MessagesPerUser, r.FilesPerUser, concurrency, time.Duration(r.ModelLatencyMS*float64(time.Millisecond)), r.GOMAXPROCS)
	if r.Discord != nil {
		p("platform       discord: each message a DM to the Discord adapter (MESSAGE_CREATE over the gateway of a fake Discord), answered by a reply post\n")
	} else {
		p("platform       direct: each message a task given to the agent\n")
	}
	p("tasks          %d in %.2fs: %.1f tasks/s (%d failed)\n", r.Tasks, r.WallSeconds, r.TasksPerSecond, r.FailedTasks)
	l := r.LatencyMS
	p("latency        p50 %s  p90 %s  p99 %s  max %s  (mean %s)\n", msText(l.P50), msText(l.P90), msText(l.P99), msText(l.Max), msText(l.Mean))
	p("model calls    %d (Thinker %d, reflector %d), %d retries, %d failures, %d connections opened\n",
		r.ModelCalls, r.ThinkerCalls, r.ReflectorCalls, r.Retries, r.ModelFailures, r.Connections)
	p("memory reads   %d by the Thinker, %d replies quote them\n", r.MemoryReads, r.RepliesQuoting)
	idle := "no idle"
	if r.ReflectIdleMS > 0 {
		idle = "idle " + msText(r.ReflectIdleMS)
	}
	p("reflections    %d runs over %d turns (every %d turns of a user, %s); %d episode entries written, all found in the files: %s\n",
		r.Reflections, r.TurnsReflected, r.ReflectTurns, idle, r.EntriesWritten, yesNo(int64(r.EntriesWritten) == r.Reflections))
	p("               the rest took %v after the load\n", time.Duration(r.DrainSeconds*float64(time.Second)).Round(time.Millisecond))
	p("memory files   %d (%s) for %d users at the end\n", r.Files, sizeText(r.MemoryBytes), r.Users)
	p("Go heap        %s in use at peak, %s live after the load", sizeText(r.HeapPeak), sizeText(r.HeapLive))
	if r.Discord != nil {
		p(" (%s of it the fake Discord's records)", sizeText(r.Discord.FakeHeapLive))
	}
	p("\n")
	p("max RSS        %s (the process's peak so far)\n", sizeText(r.MaxRSS))
	fakes := "fake model included"
	if d := r.Discord; d != nil {
		fakes = "fake model and fake Discord included"
		p("discord        %d messages, %d replies, %d reply posts refused, %d typing indicators\n",
			d.Messages, d.Replies, d.PostFailures, d.Typings)
		p("               %d REST calls over %d connections, %d gateway connection(s), %d gateway events\n",
			d.RESTCalls, d.RESTConnections, d.GatewayConns, d.GatewayEvents)
	}
	p("CPU            %.2fs user, %.2fs sys (%.2f ms per task, %s)\n", r.CPUUserSeconds, r.CPUSysSeconds, perTaskMS(cpuSeconds(r), r.Tasks), fakes)
	if s := r.CPUBySide; s != nil {
		p("  by side      mnemo %.2f ms, fake model %.2f ms", perTaskMS(s[sideMnemo], r.Tasks), perTaskMS(s[sideFakeModel], r.Tasks))
		if r.Discord != nil {
			p(", fake Discord %.2f ms", perTaskMS(s[sideFakeDiscord], r.Tasks))
		}
		p(", load tool %.2f ms per task (CPU profile labels; mnemo includes the Go runtime's GC)\n", perTaskMS(s[sideTool], r.Tasks))
	}
	if r.Kept {
		p("data           %s\n", r.Dir)
	}
	return b.String()
}

func msText(ms float64) string {
	return time.Duration(ms * float64(time.Millisecond)).Round(roundTo(ms)).String()
}

// roundTo keeps three significant digits or so.
func roundTo(ms float64) time.Duration {
	switch {
	case ms >= 1000:
		return 10 * time.Millisecond
	case ms >= 100:
		return time.Millisecond
	case ms >= 10:
		return 100 * time.Microsecond
	case ms >= 1:
		return 10 * time.Microsecond
	}
	return time.Microsecond
}

func sizeText(n int64) string {
	const mib = 1 << 20
	if n >= mib {
		return fmt.Sprintf("%.1f MiB", float64(n)/mib)
	}
	return fmt.Sprintf("%.1f KiB", float64(n)/1024)
}

func yesNo(ok bool) string {
	if ok {
		return "yes"
	}
	return "NO"
}
