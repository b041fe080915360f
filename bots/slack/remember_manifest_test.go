package slack

import (
	"os"
	"slices"
	"testing"

	"go.yaml.in/yaml/v3"
)

// The manifest shipped has the Remember this message shortcut the adapter
// handles (its callback_id; Slack's limits on name and description),
// interactivity on (the shortcut and the Undo come over the socket) and
// the commands scope shortcuts need.
func TestManifestRememberThis(t *testing.T) {
	data, err := os.ReadFile("../../deploy/slack-app-manifest.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Features struct {
			Shortcuts []struct {
				Name        string `yaml:"name"`
				Type        string `yaml:"type"`
				CallbackID  string `yaml:"callback_id"`
				Description string `yaml:"description"`
			} `yaml:"shortcuts"`
		} `yaml:"features"`
		OAuth struct {
			Scopes struct {
				Bot []string `yaml:"bot"`
			} `yaml:"scopes"`
		} `yaml:"oauth_config"`
		Settings struct {
			Interactivity struct {
				Enabled bool `yaml:"is_enabled"`
			} `yaml:"interactivity"`
		} `yaml:"settings"`
	}
	if err := yaml.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, s := range m.Features.Shortcuts {
		if s.CallbackID != callbackRemember {
			continue
		}
		found = true
		if s.Type != "message" || s.Name == "" || len(s.Name) > 24 || s.Description == "" || len(s.Description) > 80 {
			t.Errorf("shortcut %+v: want a message shortcut, name up to 24 and description up to 80 characters", s)
		}
	}
	if !found {
		t.Errorf("features.shortcuts lacks callback_id %s", callbackRemember)
	}
	if !m.Settings.Interactivity.Enabled || !slices.Contains(m.OAuth.Scopes.Bot, "commands") {
		t.Error("the shortcut needs interactivity on and the commands scope")
	}
}
