//go:build unix

package discord

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/bots/discord/discordtest"
	"github.com/mnemo-agent/mnemo/bots/internal/bottest"
)

// Streaming bench (issue 22, item 7): a scripted model writes a 30-word
// reply at one word per 200 ms into the task's stream.
const (
	benchWords = 30
	benchEvery = 200 * time.Millisecond
)

// BenchmarkStream is a streamed reply through the adapter, discordgo and
// discordtest (Discord's real edit limit, 5 per 5 s): added-ms is the
// time from the model's first word to the first post that shows it (what
// mnemo adds to the model's own first-token time; goal ≤ 300 ms),
// edits/reply the message edits a reply took, cpu-ms/reply the process's
// CPU time per reply (the fake's included).
func BenchmarkStream(b *testing.B) {
	srv := discordtest.New(b, discordtest.Options{})
	srv.AddUser(alice)
	srv.AddChannel(discordgo.Channel{ID: dmID, Type: discordgo.ChannelTypeDM})
	h := bottest.NewHandler()
	var mu sync.Mutex
	var firstWord time.Time
	h.SetReply(func(task mnemo.Task) (mnemo.Reply, error) {
		var all strings.Builder
		for i := range benchWords {
			if i > 0 {
				time.Sleep(benchEvery) // the model's pace: the bench's input, not a wait
			}
			w := "word "
			if i == 0 {
				mu.Lock()
				firstWord = time.Now()
				mu.Unlock()
			}
			all.WriteString(w)
			task.Stream.Text(w)
		}
		return mnemo.Reply{Text: all.String(), Streamed: true}, nil
	})
	bot, err := New(Config{Token: srv.Options().Token, APIURL: srv.URL(), Handler: h,
		Logger: newLogger(discard{}), IntakeDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	bot.typingEvery = time.Hour
	bottest.Start(b, bot.Run, bottest.RunOptions{Ready: bot.Ready, Logs: &bottest.LogBuffer{}, Timeout: wait})
	if err := srv.WaitReady(1, wait); err != nil {
		b.Fatal(err)
	}
	bottest.WaitFor(b, "Ready", wait, bot.Ready)
	var added time.Duration
	cpu0 := processCPU()
	b.ResetTimer()
	for i := range b.N {
		srv.MessageCreate(discordgo.Message{ChannelID: dmID, Author: &alice, Content: "tell me"})
		posts, err := srv.WaitPosts(i+1, time.Minute)
		if err != nil {
			b.Fatal(err)
		}
		shown := time.Now()
		mu.Lock()
		added += shown.Sub(firstWord)
		mu.Unlock()
		id := posts[i].Message.ID
		if _, err := srv.WaitMessage(dmID, id, time.Minute, func(m discordgo.Message) bool {
			return strings.Count(m.Content, "word") == benchWords
		}); err != nil {
			b.Fatal(err)
		}
		bottest.WaitFor(b, "the reply done", time.Minute, func() bool { return bot.pipe.Journal().Len() == 0 })
	}
	b.StopTimer()
	b.ReportMetric(float64(added)/float64(time.Millisecond)/float64(b.N), "added-ms")
	b.ReportMetric(float64(len(srv.MessageEdits()))/float64(b.N), "edits/reply")
	b.ReportMetric(float64(processCPU()-cpu0)/float64(time.Millisecond)/float64(b.N), "cpu-ms/reply")
}
