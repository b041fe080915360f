package slack

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// manifest is what the tests check of deploy/slack-app-manifest.yaml.
type manifest struct {
	Features struct {
		AppHome struct {
			HomeTab bool `yaml:"home_tab_enabled"`
		} `yaml:"app_home"`
		AssistantView *struct {
			Description string `yaml:"assistant_description"`
			Prompts     []struct {
				Title   string `yaml:"title"`
				Message string `yaml:"message"`
			} `yaml:"suggested_prompts"`
		} `yaml:"assistant_view"`
		AgentView any `yaml:"agent_view"`
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
		Events struct {
			Bot []string `yaml:"bot_events"`
		} `yaml:"event_subscriptions"`
		Interactivity struct {
			Enabled bool `yaml:"is_enabled"`
		} `yaml:"interactivity"`
	} `yaml:"settings"`
}

func readManifest(t *testing.T) manifest {
	t.Helper()
	data, err := os.ReadFile("../../deploy/slack-app-manifest.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var m manifest
	if err := yaml.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// The manifest shipped subscribes to the assistant events the adapter
// handles, grants the scope their methods need and uses assistant_view
// (the shape whose calls take thread_ts), with at most four prompts.
func TestManifestAssistant(t *testing.T) {
	m := readManifest(t)
	for _, e := range []string{eventThreadStarted, eventThreadContextChanged, "message.im"} {
		if !slices.Contains(m.Settings.Events.Bot, e) {
			t.Errorf("bot_events lacks %s", e)
		}
	}
	if !slices.Contains(m.OAuth.Scopes.Bot, "assistant:write") {
		t.Error("scopes lack assistant:write (setSuggestedPrompts, setTitle)")
	}
	view := m.Features.AssistantView
	if view == nil || m.Features.AgentView != nil {
		t.Fatal("features need assistant_view and not agent_view: mnemo's calls name the thread")
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

// The manifest shipped has the Remember this message shortcut the adapter
// handles (its callback_id; Slack's limits on name and description),
// interactivity on (the shortcut and the Undo come over the socket) and
// the commands scope shortcuts need.
func TestManifestRememberThis(t *testing.T) {
	m := readManifest(t)
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

// The manifest shipped turns the Home tab on and subscribes to the event
// that publishes it.
func TestManifestHome(t *testing.T) {
	m := readManifest(t)
	if !m.Features.AppHome.HomeTab || !slices.Contains(m.Settings.Events.Bot, "app_home_opened") || !m.Settings.Interactivity.Enabled {
		t.Errorf("manifest: %+v", m)
	}
}

// The setup steps in bots/README.md name every bot scope and event the
// manifest asks for, and no other: an operator who reads them before
// installing knows what the app will be granted.
func TestReadmeNamesTheManifest(t *testing.T) {
	m := readManifest(t)
	data, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(data)
	start := strings.Index(readme, "1. **Create the app from the manifest.**")
	end := strings.Index(readme, "2. **Install it.**")
	if start < 0 || end < start {
		t.Fatal("bots/README.md has no setup step 1")
	}
	step := readme[start:end]
	var named []string
	for _, c := range regexp.MustCompile("`([a-z_.]+(?::[a-z_]+)?)`").FindAllStringSubmatch(step, -1) {
		named = append(named, c[1])
	}
	for _, want := range append(slices.Clone(m.OAuth.Scopes.Bot), m.Settings.Events.Bot...) {
		if !slices.Contains(named, want) {
			t.Errorf("bots/README.md setup step 1 does not name %s, which the manifest asks for", want)
		}
	}
	for _, n := range named {
		if strings.Contains(n, ":") && !slices.Contains(m.OAuth.Scopes.Bot, n) {
			t.Errorf("bots/README.md setup step 1 names the scope %s, which the manifest does not ask for", n)
		}
	}
}
