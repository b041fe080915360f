package console

import "github.com/mnemo-agent/mnemo/bots/platform"

// Platform is the terminal as it registers with mnemo (bots/registry):
// the Terminal platform, run by serve and chat always; no configuration
// section and no access rules (the terminal is the operator's own); its
// intake journal in memory, so an offline forget has no file of it to
// drop from (ForgetQueued nil).
func Platform() platform.Platform {
	return platform.Platform{
		Name:     Name,
		Terminal: true,
		New:      func(d platform.Deps) (platform.Adapter, error) { return New(d), nil },
	}
}
