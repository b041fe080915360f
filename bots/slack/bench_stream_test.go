//go:build unix

package slack

import (
	"io"
	"log/slog"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/bots/internal/bottest"
	"github.com/mnemo-agent/mnemo/bots/slack/slacktest"
)

// Streaming bench (issue 22, item 7): a scripted model writes a 30-word
// reply at one word per 200 ms into the task's stream.
const (
	benchWords = 30
	benchEvery = 200 * time.Millisecond
)

// BenchmarkStream is a streamed reply to a mention (a Slack stream in its
// thread), and with refused=true one where the workspace refuses streams
// (chat.postMessage + chat.update), through the adapter, slack-go and
// slacktest: added-ms is the time from the model's first word to the
// first message that shows it (goal ≤ 300 ms), updates/reply the
// appendStream, stopStream and chat.update calls a reply took,
// cpu-ms/reply the process's CPU time per reply (the fake's included).
func BenchmarkStream(b *testing.B) {
	for _, refused := range []bool{false, true} {
		name := "stream"
		if refused {
			name = "refused"
		}
		b.Run(name, func(b *testing.B) { benchStream(b, refused) })
	}
}

func benchStream(b *testing.B, refused bool) {
	srv := slacktest.New(b, slacktest.Options{})
	if refused {
		srv.RefuseStreams("not_allowed_token_type")
	}
	h := bottest.NewHandler()
	var mu sync.Mutex
	var firstWord time.Time
	h.SetReply(func(task mnemo.Task) (mnemo.Reply, error) {
		var all strings.Builder
		for i := range benchWords {
			if i > 0 {
				time.Sleep(benchEvery) // the model's pace: the bench's input, not a wait
			}
			if i == 0 {
				mu.Lock()
				firstWord = time.Now()
				mu.Unlock()
			}
			all.WriteString("word ")
			task.Stream.Text("word ")
		}
		return mnemo.Reply{Text: all.String(), Streamed: true}, nil
	})
	bot, err := New(Config{BotToken: srv.Options().BotToken, AppToken: srv.Options().AppToken, APIURL: srv.APIURL(),
		Handler: h, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), IntakeDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	bottest.Start(b, bot.Run, bottest.RunOptions{Ready: bot.Ready, Logs: &bottest.LogBuffer{}, Timeout: wait})
	if err := srv.WaitConnected(1, wait); err != nil {
		b.Fatal(err)
	}
	bottest.WaitFor(b, "Ready", wait, bot.Ready)
	first := func() int { return len(srv.Chat("chat.startStream")) + len(srv.Posts()) }
	// until waits for cond on the fake's records, woken by each of them.
	until := func(what string, cond func() bool) {
		deadline := time.NewTimer(time.Minute)
		defer deadline.Stop()
		for {
			changed := srv.Changed()
			if cond() {
				return
			}
			select {
			case <-changed:
			case <-deadline.C:
				b.Fatalf("timed out waiting for %s", what)
			}
		}
	}
	var added time.Duration
	cpu0 := processCPU()
	b.ResetTimer()
	for i := range b.N {
		srv.AppMention(slacktest.AppMentionEvent{Channel: "C1", User: "U1", Text: "<@U0BOT> tell me"})
		until("the first words", func() bool { return first() > i })
		shown := time.Now()
		mu.Lock()
		added += shown.Sub(firstWord)
		mu.Unlock()
		until("the whole reply", func() bool {
			whole := 0
			for _, u := range srv.Chat("chat.update") {
				if strings.Count(u.Text, "word") == benchWords {
					whole++
				}
			}
			return whole > i
		})
		bottest.WaitFor(b, "the reply done", time.Minute, func() bool { return bot.pipe.Journal().Len() == 0 && bot.Queued() == 0 })
	}
	b.StopTimer()
	updates := len(srv.Chat("chat.appendStream")) + len(srv.Chat("chat.stopStream")) + len(srv.Chat("chat.update"))
	b.ReportMetric(float64(added)/float64(time.Millisecond)/float64(b.N), "added-ms")
	b.ReportMetric(float64(updates)/float64(b.N), "updates/reply")
	b.ReportMetric(float64(processCPU()-cpu0)/float64(time.Millisecond)/float64(b.N), "cpu-ms/reply")
}

// processCPU is the CPU time (user and system) the process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
