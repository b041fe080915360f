package core

import (
	"fmt"

	"github.com/mnemo-agent/mnemo/agent"
)

// ChannelMemory validates a <platform>.channelMemory setting (key names
// it in the error, e.g. "discord.channelMemory"): "" is
// agent.ChannelMemoryRead; full, read and off are kept; anything else is
// an error that names key and the choices.
func ChannelMemory(key, setting string) (string, error) {
	switch setting {
	case "":
		return agent.ChannelMemoryRead, nil
	case agent.ChannelMemoryFull, agent.ChannelMemoryRead, agent.ChannelMemoryOff:
		return setting, nil
	}
	return "", fmt.Errorf("%s is %q; use full, read or off", key, setting)
}

// TaskMemory is the Task.ChannelMemory for a message: agent.ChannelMemoryFull
// in a DM (a DM is private: memory as is), else setting.
func TaskMemory(dm bool, setting string) string {
	if dm {
		return agent.ChannelMemoryFull
	}
	return setting
}
