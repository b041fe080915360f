package settings

import "testing"

func TestChannelMemory(t *testing.T) {
	for _, c := range []struct{ setting, want, err string }{
		{"", "read", ""},
		{"full", "full", ""},
		{"read", "read", ""},
		{"off", "off", ""},
		{"all", "", `discord.channelMemory is "all"; use full, read or off`},
		{"Full", "", `discord.channelMemory is "Full"; use full, read or off`},
	} {
		got, err := ChannelMemory("discord.channelMemory", c.setting)
		if got != c.want || (err == nil) != (c.err == "") || err != nil && err.Error() != c.err {
			t.Errorf("ChannelMemory(%q) = %q, %v", c.setting, got, err)
		}
	}
	for _, c := range []struct {
		dm            bool
		setting, want string
	}{{true, "off", "full"}, {true, "read", "full"}, {false, "off", "off"}, {false, "read", "read"}, {false, "full", "full"}} {
		if got := TaskMemory(c.dm, c.setting); got != c.want {
			t.Errorf("TaskMemory(%v, %q) = %q", c.dm, c.setting, got)
		}
	}
}
