package slack

import (
	"bytes"
	"os"
	"slices"
	"testing"

	"go.yaml.in/yaml/v3"
)

// The manifest shipped subscribes to the assistant events the adapter
// handles, grants the scope their methods need and uses assistant_view
// (the shape whose calls take thread_ts), with at most four prompts.
func TestManifestAssistant(t *testing.T) {
	data, err := os.ReadFile("../../deploy/slack-app-manifest.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Features map[string]yaml.Node `yaml:"features"`
		OAuth    struct {
			Scopes struct {
				Bot []string `yaml:"bot"`
			} `yaml:"scopes"`
		} `yaml:"oauth_config"`
		Settings struct {
			Events struct {
				Bot []string `yaml:"bot_events"`
			} `yaml:"event_subscriptions"`
		} `yaml:"settings"`
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&m); err != nil {
		t.Fatal(err)
	}
	for _, e := range []string{eventThreadStarted, eventThreadContextChanged, "message.im"} {
		if !slices.Contains(m.Settings.Events.Bot, e) {
			t.Errorf("bot_events lacks %s", e)
		}
	}
	if !slices.Contains(m.OAuth.Scopes.Bot, "assistant:write") {
		t.Error("scopes lack assistant:write (setSuggestedPrompts, setTitle)")
	}
	node, ok := m.Features["assistant_view"]
	if _, agent := m.Features["agent_view"]; !ok || agent {
		t.Fatal("features need assistant_view and not agent_view: mnemo's calls name the thread")
	}
	var view struct {
		Description string `yaml:"assistant_description"`
		Prompts     []struct {
			Title   string `yaml:"title"`
			Message string `yaml:"message"`
		} `yaml:"suggested_prompts"`
	}
	if err := node.Decode(&view); err != nil {
		t.Fatal(err)
	}
	if view.Description == "" || len(view.Description) > 300 || len(view.Prompts) == 0 || len(view.Prompts) > maxPrompts {
		t.Errorf("assistant_view: %+v", view)
	}
	for _, p := range view.Prompts {
		if p.Title == "" || p.Message == "" {
			t.Errorf("prompt %+v needs a title and a message", p)
		}
	}
}
