package console

import (
	"testing"

	"github.com/mnemo-agent/mnemo/bots/platform"
)

// The terminal registers as the Terminal platform under its name, with
// no token, section, access rules or journal file, and makes a Chat.
func TestPlatform(t *testing.T) {
	p := Platform()
	if p.Name != Name || !p.Terminal || p.Enabled != nil || p.Settings != nil || p.ForgetQueued != nil || p.Access.Modes != nil {
		t.Errorf("registration %+v", p)
	}
	ad, err := p.New(platform.Deps{})
	if c, ok := ad.(*Chat); !ok || err != nil {
		t.Fatalf("adapter %T, %v; want a *Chat", ad, err)
	} else {
		c.Close()
	}
}
