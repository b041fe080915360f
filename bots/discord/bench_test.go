//go:build unix

package discord

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/mnemo-agent/mnemo/bots/discord/discordtest"
	"github.com/mnemo-agent/mnemo/bots/internal/bottest"
)

// BenchmarkMessage is a DM's whole way through the adapter and its client
// library (gateway event, journal, queue, answer, post) against
// discordtest, in bursts of 64: ns/op is the wall time per message,
// cpu-ms/msg the process's CPU time per message (the fake's included).
func BenchmarkMessage(b *testing.B) {
	srv := discordtest.New(b, discordtest.Options{})
	srv.AddUser(alice)
	srv.AddChannel(discordgo.Channel{ID: dmID, Type: discordgo.ChannelTypeDM})
	logs := &bottest.LogBuffer{}
	bot, err := New(Config{Token: srv.Options().Token, APIURL: srv.URL(), Handler: bottest.NewHandler(),
		Logger: newLogger(discard{}), IntakeDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	bot.typingEvery = time.Hour
	bottest.Start(b, bot.Run, bottest.RunOptions{Ready: bot.Ready, Logs: logs, Timeout: wait})
	if err := srv.WaitReady(1, wait); err != nil {
		b.Fatal(err)
	}
	bottest.WaitFor(b, "Ready", wait, bot.Ready)
	cpu0 := processCPU()
	b.ResetTimer()
	sent := 0
	for sent < b.N {
		burst := min(64, b.N-sent)
		for i := range burst {
			srv.MessageCreate(discordgo.Message{ChannelID: dmID, Author: &alice, Content: fmt.Sprint("m", sent+i)})
		}
		sent += burst
		if _, err := srv.WaitPosts(sent, time.Minute); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(processCPU()-cpu0)/float64(time.Millisecond)/float64(b.N), "cpu-ms/msg")
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// processCPU is the CPU time (user and system) the process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
