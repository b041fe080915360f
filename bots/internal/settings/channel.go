package settings

import (
	"fmt"

	"github.com/mnemo-agent/mnemo"
)

// ChannelMemory validates a <platform>.channelMemory setting (key names
// it in the error, e.g. "discord.channelMemory"): "" is
// mnemo.ChannelMemoryRead; full, read and off are kept; anything else is
// an error that names key and the choices.
func ChannelMemory(key, setting string) (string, error) {
	switch setting {
	case "":
		return mnemo.ChannelMemoryRead, nil
	case mnemo.ChannelMemoryFull, mnemo.ChannelMemoryRead, mnemo.ChannelMemoryOff:
		return setting, nil
	}
	return "", fmt.Errorf("%s is %q; use full, read or off", key, setting)
}

// TaskMemory is the Task.ChannelMemory for a message: mnemo.ChannelMemoryFull
// in a DM (a DM is private: memory as is), else setting.
func TaskMemory(dm bool, setting string) string {
	if dm {
		return mnemo.ChannelMemoryFull
	}
	return setting
}
