// Command mnemo-load measures mnemo's core under load with a fake model, so
// that throughput, latency and memory figures can be reproduced with one
// command:
//
//	go run ./cmd/mnemo-load                        # 50 users × 20 messages, concurrency 16
//	go run ./cmd/mnemo-load -users 200 -messages 10
//	go run ./cmd/mnemo-load -model-latency 200ms -concurrency 64 -json
//	go run ./cmd/mnemo-load -platform both          # direct, then through the Discord adapter
//
// It runs the real memory store (with its fsnotify watcher), the real model
// client over HTTP, the real Thinker and the real reflector, against an
// OpenAI-compatible fake on 127.0.0.1 (agent/openaitest) that behaves like a
// model using memory: the Thinker reads facts/user.md and quotes it, the
// reflector appends one episode entry per run. Each user's messages go in
// order on the user's own conversation, -concurrency tasks (of as many
// users) at once, the users taking turns.
// At the end it checks that every episode entry the reflector was told to
// append is in the user's files, and reports tasks/s, latency percentiles,
// model calls, reflections, heap, RSS and CPU. Run `mnemo-load -h` for the
// flags.
//
// With -platform discord the messages go as Discord DMs (MESSAGE_CREATE
// over the gateway) to the real Discord adapter (bots/discord) in front of
// the same agent, against a fake Discord on 127.0.0.1
// (bots/discord/discordtest); every message must get exactly one reply
// post. -platform both runs the direct load, then the Discord one, in one
// process and prints what the Discord path adds per message. The fakes run
// in this process: a CPU profile labelled by side (runtime/pprof labels)
// tells their share of the CPU time.
//
// With -bench first (`make bench`), it measures the real binary instead:
// bin/mnemo as a child process (chat per message and against a bare client,
// start → exit, console, Slack and Discord at 1, 10, 100 users, serve's
// start-up and RSS, edit-to-index, LLM calls per message, request sizes,
// binary size, serve's open files, goroutines and RSS as 100, 1,000 and
// 10,000 distinct people write) against the fakes in this process, prints one Markdown table
// and, with -readme, writes it into a README's Performance section: make
// bench writes cmd/mnemo-load/README.md (bench*.go; run
// `mnemo-load -bench -h` for its flags).
//
// Exit status: 0 success; 1 failure (also a run whose checks failed: the
// report is printed, then the problems); 2 usage error.
package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() { os.Exit(mainCode(os.Args[1:], os.Stdout, os.Stderr)) }

// mainCode runs the command until it ends or a signal interrupts it, and
// returns the exit status.
func mainCode(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return exitCode(run(ctx, args, stdout, stderr), stderr)
}
