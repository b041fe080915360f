package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/mnemo-agent/mnemo/bots/slack/slacktest"
)

// TestServeJSONLogs: with --log-format json every log line is one JSON
// object; every line about a task names the task, the platform and the
// memory user; no token or key is ever written.
func TestServeJSONLogs(t *testing.T) {
	w := newChatWorld(t)
	const bot, app = "xoxb-1234567890-secret-bot-token", "xapp-1-A0-1234567890-secret-app-token"
	slk := w.fakeSlack(t, bot, app)
	ctx, cancel := context.WithCancel(context.Background())
	var errOut syncWriter
	done := make(chan int, 1)
	go func() {
		err := run(stopOn(ctx), []string{"serve", "--listen", "127.0.0.1:0", "--log-format", "json"}, func(k string) string { return w.env[k] }, strings.NewReader(""), io.Discard, &errOut)
		done <- exitCode(err, &errOut)
	}()
	if err := slk.WaitConnected(1, 10*time.Second); err != nil {
		cancel()
		t.Fatalf("no Socket Mode connection: %v\n%s", err, errOut.String())
	}
	slk.Message(slacktest.MessageEvent{Channel: "D0DM", ChannelType: "im", User: "U0ADA", Text: "Hello, I'm Ada Lovelace."})
	if _, err := slk.WaitPosts(1, 10*time.Second); err != nil {
		cancel()
		t.Fatalf("no reply: %v\n%s", err, errOut.String())
	}
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("serve exit %d:\n%s", code, errOut.String())
	}
	logs := errOut.String()
	for _, secret := range []string{bot, app, w.env["OPENAI_API_KEY"]} {
		if strings.Contains(logs, secret) {
			t.Errorf("a secret was logged: %q", secret)
		}
	}
	taskLines := 0
	sc := bufio.NewScanner(strings.NewReader(logs))
	for sc.Scan() {
		var line map[string]any
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Errorf("not a JSON line: %q (%v)", sc.Text(), err)
			continue
		}
		for _, k := range []string{"time", "level", "msg"} {
			if _, ok := line[k]; !ok {
				t.Errorf("line without %q: %s", k, sc.Text())
			}
		}
		if _, ok := line["task_id"]; !ok {
			continue
		}
		taskLines++
		_, user := line["user"]
		_, memUser := line["memory_user"]
		if line["platform"] != "slack" || !(user || memUser) {
			t.Errorf("a task's line without its platform or memory user: %s", sc.Text())
		}
	}
	if taskLines < 3 {
		t.Errorf("%d log lines name the task; want the adapter's and the agent's:\n%s", taskLines, logs)
	}
}
