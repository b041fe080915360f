package reference

import (
	"context"
	"testing"
	"testing/synctest"

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
	synctest.Test(t, testReferencePlatform)
}

func testReferencePlatform(t *testing.T) {
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
	// Every goroutine of the bubble waits: Run is serving.
	synctest.Wait()
	if !c.Ready() {
		t.Fatal("not ready once started")
	}
	c.Send(context.Background(), "ref-user", "hi")
	// The reply is posted before the journal marks the message done:
	// both have happened once every goroutine waits again.
	synctest.Wait()
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
	if c.Ready() {
		t.Error("ready after Run returned")
	}
	if n, err := p.ForgetQueued(dir, "ref-user"); n != 0 || err != nil {
		t.Errorf("forget offline: %d, %v", n, err)
	}
}
