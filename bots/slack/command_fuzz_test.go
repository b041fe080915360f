package slack

import (
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/slack-go/slack/socketmode"

	"github.com/mnemo-agent/mnemo/bots/internal/bottest"
	"github.com/mnemo-agent/mnemo/bots/internal/memorycmd"
	"github.com/mnemo-agent/mnemo/memory"
)

// FuzzMemoryCommand: whatever follows /memory, the answer fits an ack, is
// private, nothing is deleted without the confirmation button, and a
// file's visibility changes only by share or private naming that very
// file of the asker's.
func FuzzMemoryCommand(f *testing.F) {
	for _, s := range []string{"", "show", "forget", "forget all", "forget facts/user.md", "forget ../../etc/passwd", "help", "forget `facts/x.md`", "&lt;!channel&gt;", "forget " + strings.Repeat("x", 5000),
		"share facts/user.md", "private `facts/user.md`", "share", "private all", "share ../slack-T0TEAM-U0BOB/facts/user.md", "share facts/user.md facts/user.md", "share " + strings.Repeat("x", 5000)} {
		f.Add(s)
	}
	mem := &bottest.Memory{ShowText: strings.Repeat("- facts/user.md (1KB): a line\n", 2000),
		Files: map[string]bool{"slack-T0TEAM-U0ADA:facts/user.md": false, "slack-T0TEAM-U0BOB:facts/user.md": false},
		Check: func(p string) error { _, err := memory.ParsePath(p); return err }}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	b := &Bot{cfg: Config{Memory: mem}, log: log, now: time.Now, teamID: "T0TEAM",
		flow: &memorycmd.Flow{Memory: mem, Confirms: memorycmd.NewConfirms(memorycmd.MaxConfirms, memorycmd.ConfirmTTL), Log: log, Platform: "Slack"}}
	changes := 0
	f.Fuzz(func(t *testing.T, text string) {
		msg := fitAck(b.memoryCommand("T0TEAM", "T0TEAM", "U0ADA", "", textUnescaper.Replace(text), b.who("T0TEAM", "", "U0ADA")))
		if js, _ := json.Marshal(socketmode.Response{EnvelopeID: strings.Repeat("0", 36), Payload: msg}); len(js) >= maxAckBytes {
			t.Fatalf("/memory %q: an ack of %d bytes", text, len(js))
		}
		if msg.ResponseType != "ephemeral" {
			t.Fatalf("/memory %q answered publicly: %+v", text, msg)
		}
		if len(msg.Text) == 0 {
			t.Fatalf("/memory %q: empty answer", text)
		}
		if len(mem.Forgotten()) != 0 {
			t.Fatalf("/memory %q deleted without confirmation", text)
		}
		sets := mem.Sets()
		if cmd := memorycmd.Parse(textUnescaper.Replace(text)); len(sets) > changes &&
			((cmd.Kind != memorycmd.Share && cmd.Kind != memorycmd.Private) || cmd.Target != "facts/user.md" || len(sets) != changes+1 ||
				sets[changes] != "slack-T0TEAM-U0ADA:facts/user.md:"+map[bool]string{true: "shared", false: "private"}[cmd.Kind == memorycmd.Share]) {
			t.Fatalf("/memory %q changed %v", text, sets[changes:])
		}
		changes = len(sets)
		if mem.IsShared("slack-T0TEAM-U0BOB:facts/user.md") {
			t.Fatalf("/memory %q changed someone else's file", text)
		}
	})
}
