package reference

import (
	"context"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/bots/platform"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type echo struct{}

func (echo) Handle(_ context.Context, t mnemo.Task) (mnemo.Reply, error) {
	return mnemo.Reply{TaskID: t.ID, Text: "you said: " + t.Text}, nil
}

// Registered, the reference platform is on only when its section says
// so; made, it answers a message through the pipeline, and its journal
// is a forget's holder, live and on disk.
func TestReferencePlatform(t *testing.T) {
	p := Platform()
	if p.Name != Name || p.Enabled(platform.SectionOf(nil)) || !p.Enabled(platform.SectionOf(map[string]bool{"Enabled": true})) {
		t.Fatal("enabled without its section, or not with it")
	}
	dir := t.TempDir()
	ad, err := p.New(platform.Deps{Handler: echo{}, IntakeDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	c := ad.(*Chat)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	for !c.Ready() {
		time.Sleep(time.Millisecond)
	}
	c.Send(context.Background(), "ref-user", "hi")
	// The reply is posted before the journal marks the message done:
	// wait for both.
	for deadline := time.Now().Add(10 * time.Second); (len(c.Posts()) == 0 || c.Queued() != 0) && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	if got := c.Posts(); len(got) != 1 || got[0] != "you said: hi" {
		t.Errorf("posts %q", got)
	}
	if c.Forget("ref-user") != 0 || c.Queued() != 0 {
		t.Error("a message answered still waits")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n, err := p.ForgetQueued(dir, "ref-user"); n != 0 || err != nil {
		t.Errorf("forget offline: %d, %v", n, err)
	}
}
