package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"golang.org/x/term"

	"github.com/mnemo-agent/mnemo/agent"
	"github.com/mnemo-agent/mnemo/agent/llm"
	"github.com/mnemo-agent/mnemo/agent/llm/openai"
	"github.com/mnemo-agent/mnemo/cmd/internal/config"
	"github.com/mnemo-agent/mnemo/cmd/internal/wiring"
	"github.com/mnemo-agent/mnemo/memory/durable"
)

// initCheckTimeout bounds the one real request mnemo init makes.
const initCheckTimeout = 30 * time.Second

// initSetup is what mnemo init asks for.
type initSetup struct {
	baseURL, apiKey, model string
}

// initCmd is one run of mnemo init.
type initCmd struct {
	env      *cliEnv
	in       *bufio.Reader
	ask      bool // prompt for what the flags do not give (not --yes)
	http     *http.Client
	config   string // the configuration file to write
	envFile  string // the secrets file to write (when there is a key)
	explicit bool   // --config named the file
	// git tells whether path is ignored in the work tree at root (runGit;
	// tests stand in for it).
	git func(root, path string) (ignored, ok bool)
}

// runInit is `mnemo init`: an interactive first setup. It asks for the
// model server's address (offering a local Ollama when one answers), the
// API key and the model (listing those the server offers), checks them
// with one real request, and writes a commented configuration file and,
// for the key, an env file of mode 0600: secrets never go in the YAML.
// Flags answer the questions for scripts; --yes takes the defaults for
// the rest without asking.
func initFlags(fs *flag.FlagSet) (runner, string) {
	var o initOptions
	fs.StringVar(&o.baseURL, "base-url", "", "the model server's base URL")
	fs.StringVar(&o.apiKey, "api-key", "", "the API key")
	fs.StringVar(&o.model, "model", "", "the model")
	fs.StringVar(&o.envFile, "env-file", "", "where the key is written")
	fs.BoolVar(&o.force, "force", false, "replace existing files")
	fs.BoolVar(&o.yes, "yes", false, "take the defaults, ask nothing")
	return func(ctx context.Context, env *cliEnv, _ *config.Config, args []string) error {
		return runInit(ctx, env, o, args)
	}, initUsage
}

const initUsage = "mnemo init [--base-url URL] [--api-key KEY] [--model NAME] [--env-file FILE] [--force] [--yes]"

// initOptions are init's flags.
type initOptions struct {
	baseURL, apiKey, model, envFile string
	force, yes                      bool
}

func runInit(ctx context.Context, env *cliEnv, o initOptions, args []string) error {
	if len(args) > 0 {
		return usageError("init takes no arguments; usage: %s", initUsage)
	}
	configFile := env.configFile
	baseURL, apiKey, model, envFile, force, yes := &o.baseURL, &o.apiKey, &o.model, &o.envFile, &o.force, &o.yes
	c := &initCmd{
		env: env, in: bufio.NewReader(env.stdin), ask: !*yes,
		http:   &http.Client{Transport: wiring.ModelTransport(1)},
		config: configFile, explicit: configFile != "",
	}
	defer c.http.CloseIdleConnections()
	if c.config == "" {
		c.config = config.DefaultFile
	}
	c.envFile = *envFile
	if c.envFile == "" {
		c.envFile = filepath.Join(filepath.Dir(c.config), "mnemo.env")
	}
	if !*force {
		for _, f := range []string{c.config, c.envFile} {
			if _, err := os.Lstat(f); err == nil {
				return failure(fmt.Errorf("init: %s already exists; edit it, or run mnemo init --force to replace it", f))
			}
		}
	}
	s := initSetup{baseURL: *baseURL, apiKey: *apiKey, model: *model}
	given := s
	if s.apiKey == "" {
		s.apiKey = env.getenv("OPENAI_API_KEY")
	}
	for {
		err := c.gather(ctx, &s, given)
		switch {
		case err == nil:
			err = c.check(ctx, s)
		case !errors.Is(err, llm.ErrAuth): // a key refused already by GET /models is checked no further
			return err
		}
		if err == nil {
			break
		}
		if !c.ask { // said once, as the command's error
			return failure(fmt.Errorf("init: the check failed, nothing written: %w", err))
		}
		fmt.Fprintf(env.stderr, "mnemo: the check failed: %v\n", err)
		fmt.Fprintln(env.stderr, "Let's try again (Enter keeps an answer).")
		given = initSetup{} // ask everything again, the answers as defaults
	}
	return c.write(s)
}

// gather fills s: each value not given by a flag is asked for, with a
// default in brackets that an empty answer (or --yes) takes.
func (c *initCmd) gather(ctx context.Context, s *initSetup, given initSetup) error {
	if given.baseURL == "" {
		v, err := c.askBaseURL(c.defaultBaseURL(ctx, *s))
		if err != nil {
			return err
		}
		s.baseURL = v
	} else if err := checkBaseURL(s.baseURL); err != nil {
		return usageError("init: --base-url: %v", err)
	}
	if given.apiKey == "" {
		def := s.apiKey
		if isLocal(s.baseURL) && def == "" && c.ask {
			fmt.Fprintln(c.env.stderr, "A server on this machine usually needs no key: press Enter.")
		}
		v, err := c.prompt("API key (empty for none)", def, true)
		if err != nil {
			return err
		}
		s.apiKey = v
	}
	if given.model == "" {
		def, err := c.defaultModelOf(ctx, *s)
		if err != nil {
			return err
		}
		v, err := c.prompt("Model", def, false)
		if err != nil {
			return err
		}
		s.model = v
	}
	return nil
}

// defaultBaseURL is the address offered: the last answer, else
// $OPENAI_BASE_URL, else OpenAI's when there is a key already, else a
// local Ollama when one answers, else OpenAI's.
func (c *initCmd) defaultBaseURL(ctx context.Context, s initSetup) string {
	if s.baseURL != "" {
		return s.baseURL
	}
	if v := c.env.getenv("OPENAI_BASE_URL"); v != "" {
		return v
	}
	if s.apiKey != "" {
		// A key is for the provider that issued it: it is never offered to
		// whatever answers on the local Ollama port (any local user can
		// listen there), so that port is not asked.
		return config.OpenAIBaseURL
	}
	ollama := c.env.getenv("MNEMO_OLLAMA_URL")
	if ollama == "" {
		ollama = config.DefaultOllamaURL
	}
	if openai.ProbeModels(ctx, c.http, ollama) == nil {
		fmt.Fprintf(c.env.stderr, "A local Ollama answers at %s.\n", agent.RedactURLs(ollama))
		return ollama
	}
	return config.OpenAIBaseURL
}

// askBaseURL asks for the model server's address until it is an http(s)
// URL; with --yes a bad one is a usage error.
func (c *initCmd) askBaseURL(def string) (string, error) {
	for {
		v, err := c.prompt("Model server (OpenAI-compatible base URL)", def, false)
		if err != nil {
			return "", err
		}
		err = checkBaseURL(v)
		if err == nil {
			return v, nil
		}
		if !c.ask {
			return "", usageError("init: %v", err)
		}
		fmt.Fprintf(c.env.stderr, "mnemo: %v\n", err)
	}
}

// defaultModelOf is the model offered: the last answer or $MNEMO_MODEL
// when the server offers it (or does not list its models), else
// defaultModel when it offers that, else the first it offers. The models
// the server lists are shown. A key the server refuses is an error wrapping
// llm.ErrAuth.
func (c *initCmd) defaultModelOf(ctx context.Context, s initSetup) (string, error) {
	models, err := c.client(s).Models(ctx)
	def := s.model
	if def == "" {
		def = c.env.getenv("MNEMO_MODEL")
	}
	switch {
	case errors.Is(err, llm.ErrAuth):
		return "", fmt.Errorf("%w; give the API key the provider issued for this server", err)
	case err != nil:
		fmt.Fprintf(c.env.stderr, "mnemo: the server did not list its models (%v)\n", err)
	case len(models) > 0:
		shown := models[:min(len(models), 20)]
		more := ""
		if len(models) > len(shown) {
			more = fmt.Sprintf(" (and %d more)", len(models)-len(shown))
		}
		fmt.Fprintf(c.env.stderr, "The server offers: %s%s.\n", strings.Join(shown, ", "), more)
		if def == "" || !slices.Contains(models, def) {
			def = models[0]
			if slices.Contains(models, defaultModel) {
				def = defaultModel
			}
		}
	}
	if def == "" {
		def = defaultModel
	}
	return def, nil
}

// defaultModel is llm.model's default.
const defaultModel = "gpt-4o-mini"

// prompt asks one question on stderr and reads the answer from stdin
// (hidden at a terminal when secret). An empty answer, --yes or the end
// of input takes def; a secret default is shown as "set", not echoed.
func (c *initCmd) prompt(question, def string, secret bool) (string, error) {
	if !c.ask {
		return def, nil
	}
	shown := def
	if secret && def != "" {
		shown = "set; Enter keeps it"
	}
	if shown != "" {
		fmt.Fprintf(c.env.stderr, "%s [%s]: ", question, shown)
	} else {
		fmt.Fprintf(c.env.stderr, "%s: ", question)
	}
	var line string
	if f, ok := c.env.stdin.(*os.File); ok && secret && term.IsTerminal(int(f.Fd())) {
		b, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(c.env.stderr)
		if err != nil {
			return "", failure(fmt.Errorf("init: read the key: %w", err))
		}
		line = string(b)
	} else {
		var err error
		line, err = c.in.ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return "", failure(fmt.Errorf("init: read the answer: %w", err))
		}
		if err != nil && line == "" {
			fmt.Fprintln(c.env.stderr)
			return def, nil
		}
	}
	if v := strings.TrimSpace(line); v != "" {
		return v, nil
	}
	return def, nil
}

// checkBaseURL accepts an http(s) URL with a host.
func checkBaseURL(v string) error {
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q is not an http(s) URL; give the server's base URL, such as %s or %s", v, config.OpenAIBaseURL, config.DefaultOllamaURL)
	}
	return nil
}

// isLocal reports whether a base URL names this machine.
func isLocal(base string) bool {
	u, err := url.Parse(base)
	if err != nil {
		return false
	}
	h := u.Hostname()
	return h == "localhost" || h == "127.0.0.1" || h == "::1"
}

func (c *initCmd) client(s initSetup) *openai.Client {
	return openai.New(openai.Config{
		BaseURL: s.baseURL, APIKey: s.apiKey, HTTPClient: c.http,
		Timeout: initCheckTimeout, MaxRetries: -1,
	})
}

// check sends one small chat request and says what to change when it
// fails.
func (c *initCmd) check(ctx context.Context, s initSetup) error {
	fmt.Fprintf(c.env.stderr, "Checking %s at %s…\n", s.model, agent.RedactURLs(s.baseURL)) // a password in the URL is not shown
	client := c.client(s)
	_, err := client.Complete(ctx, llm.Request{
		Model:    s.model,
		Messages: []llm.Message{{Role: llm.RoleUser, Content: "Reply with the single word: ok"}},
	})
	if err == nil {
		fmt.Fprintln(c.env.stderr, "It answers.")
		return nil
	}
	var le *openai.Error
	errors.As(err, &le)
	switch {
	case errors.Is(err, llm.ErrAuth):
		return fmt.Errorf("%w; give the API key the provider issued for this server", err)
	case le != nil && le.StatusCode == http.StatusNotFound:
		hint := "check the model's name"
		if models, merr := client.Models(ctx); merr == nil && len(models) > 0 {
			hint = "the server offers: " + strings.Join(models[:min(len(models), 20)], ", ")
		}
		return fmt.Errorf("%w; %s", err, hint)
	case le != nil && le.StatusCode == 0 && errors.Is(err, llm.ErrUnavailable) && !errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Errorf("%w; nothing answered there: check the address (and that the server runs)", err)
	}
	return err
}

// write writes the configuration (0644) and the env file (0600: the key
// when there is one, the platform tokens to fill in), each atomically,
// and says what to run next.
func (c *initCmd) write(s initSetup) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# mnemo configuration, written by `mnemo init`. `mnemo help` lists the commands;\n")
	fmt.Fprintf(&b, "# every key with its default is in deploy/mnemo.yaml of the mnemo source.\n")
	fmt.Fprintf(&b, "# Environment variables win over this file when set.\n\n")
	fmt.Fprintf(&b, "llm:\n")
	fmt.Fprintf(&b, "  # OpenAI-compatible endpoint (env OPENAI_BASE_URL).\n  baseURL: %s\n", yamlString(s.baseURL))
	fmt.Fprintf(&b, "  # Chat model (env MNEMO_MODEL); llm.reflectorModel may name a cheaper one\n  # for the background reflection that writes memory.\n  model: %s\n", yamlString(s.model))
	if s.apiKey != "" {
		fmt.Fprintf(&b, "  # The API key is not kept here: it is OPENAI_API_KEY in %s (mode 0600).\n", filepath.Base(c.envFile))
	}
	fmt.Fprintf(&b, "\nmemory:\n  # Each person's memory: Markdown files under <dataDir>/<user>/ (env MNEMO_DATA_DIR).\n  dataDir: data/memory\n")
	// The env file is written with or without a key: the platform tokens
	// go there too, each line ready to uncomment. Without a key, a folder
	// every user may write to gets no env file but how to make one.
	envNote := ""
	if err := privateFolder(c.envFile); err != nil && s.apiKey != "" {
		return failure(fmt.Errorf("init: %w", err))
	} else if err != nil {
		envNote = fmt.Sprintf("%s was not written: %v.\nMake it in a folder of your own, mode 0600, e.g. `install -m 0600 /dev/null ~/mnemo.env`, and put the tokens there as VAR=value lines (bots/README.md).\n", c.envFile, err)
	} else if err := writeFileAtomic(c.envFile, envFileText(s.apiKey), 0o600); err != nil {
		return failure(fmt.Errorf("init: %w", err))
	}
	if err := writeFileAtomic(c.config, b.String(), 0o644); err != nil {
		return failure(fmt.Errorf("init: %w", err))
	}
	out := c.env.stdout
	cfgFlag := ""
	if c.explicit && filepath.Clean(c.config) != config.DefaultFile {
		cfgFlag = " --config " + c.config
	}
	user, _ := chatUser(c.env, "")
	self := invokedAs(c.env.self)
	if s.apiKey != "" {
		fmt.Fprintf(out, "Wrote %s and %s (the API key, mode 0600).\nNext, talk to mnemo in this terminal:\n\n  set -a; . %s; set +a\n  %s%s chat --user %s\n", c.config, c.envFile, shellPath(c.envFile), self, cfgFlag, user)
		if hint := c.gitHint(c.envFile); hint != "" {
			fmt.Fprintln(out, "\n"+hint)
		}
	} else if envNote != "" {
		fmt.Fprintf(out, "Wrote %s.\nNext, talk to mnemo in this terminal:\n\n  %s%s chat --user %s\n\n%s", c.config, self, cfgFlag, user, envNote)
		_, err := fmt.Fprintf(out, "For Slack or Discord, load that file (set -a; . FILE; set +a) and run %s%s serve.\n", self, cfgFlag)
		return err
	} else {
		fmt.Fprintf(out, "Wrote %s and %s (mode 0600, no secret yet).\nNext, talk to mnemo in this terminal:\n\n  %s%s chat --user %s\n", c.config, c.envFile, self, cfgFlag, user)
	}
	_, err := fmt.Fprintf(out, "\nFor Slack or Discord, uncomment their token lines in %s and fill them in (bots/README.md: \"Slack\", \"Discord\"), then:\n\n  set -a; . %s; set +a\n  %s%s serve\n",
		c.envFile, shellPath(c.envFile), self, cfgFlag)
	return err
}

// envFileText is the env file init writes: the API key when there is
// one, and the platform tokens as commented lines to fill in.
func envFileText(apiKey string) string {
	key := "# OPENAI_API_KEY=sk-...\n"
	if apiKey != "" {
		key = "OPENAI_API_KEY=" + apiKey + "\n"
	}
	return "# Secrets for mnemo; keep this file private (mode 0600). Load it with\n" +
		"#   set -a; . ./mnemo.env; set +a\n" + key +
		"# Slack (bots/README.md, \"Slack\"): both tokens.\n# SLACK_BOT_TOKEN=xoxb-...\n# SLACK_APP_TOKEN=xapp-...\n" +
		"# Discord (bots/README.md, \"Discord\").\n# DISCORD_BOT_TOKEN=...\n"
}

// shellPath makes a relative path usable with the shell's "." command.
func shellPath(p string) string {
	if filepath.IsAbs(p) || strings.HasPrefix(p, ".") {
		return p
	}
	return "./" + p
}

// yamlString quotes s as a YAML double-quoted scalar.
func yamlString(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s) + `"`
}

// writeFileAtomic writes a file whole or not at all (durable.WriteFile: a
// temporary file beside it, fsynced, renamed over it), with mode: a
// replaced file's looser mode is not kept for a secret. Its errors name
// the file and the step.
func writeFileAtomic(name, text string, mode os.FileMode) error {
	dir, base := filepath.Split(name)
	return durable.WriteFile(durable.Dir(dir), base, []byte(text), durable.WriteOptions{Perm: mode})
}

// privateFolder refuses a secrets file in a folder any user may write to:
// another user could replace the file between init and the next step,
// which runs it in the shell.
func privateFolder(file string) error {
	dir := filepath.Dir(file)
	fi, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if fi.Mode().Perm()&0o002 != 0 {
		return fmt.Errorf("%s is writable by every user (mode %v): another user could replace %s, which the next step runs in your shell; run mnemo init in a folder of your own, or give --env-file there", dir, fi.Mode().Perm(), filepath.Base(file))
	}
	return nil
}

// invokedAs is the command that runs this binary again, as the person
// typed it: a path ("bin/mnemo", "./mnemo") as given, a name found on
// PATH as "mnemo".
func invokedAs(self string) string {
	if strings.ContainsRune(self, '/') {
		return shellWord(self)
	}
	return "mnemo"
}

// shellWord is s as one word in a POSIX shell: as it is when it holds
// only characters no shell treats specially, else single-quoted.
func shellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./+-:@%=,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// gitHint warns when file (a secret) lies in a git work tree that does
// not ignore it: one `git add .` would commit the key. "" when it is
// ignored, not in a work tree, or git cannot tell (not installed).
func (c *initCmd) gitHint(file string) string {
	abs, err := filepath.Abs(file)
	if err != nil {
		return ""
	}
	root := ""
	for dir := filepath.Dir(abs); ; dir = filepath.Dir(dir) {
		if _, err := os.Lstat(filepath.Join(dir, ".git")); err == nil {
			root = dir
			break
		}
		if dir == filepath.Dir(dir) {
			return ""
		}
	}
	git := c.git
	if git == nil {
		git = runGit
	}
	ignored, ok := git(root, abs)
	if !ok || ignored {
		return ""
	}
	rel, _ := filepath.Rel(root, abs)
	return fmt.Sprintf("Careful: %s holds your API key and lies in the git work tree %s, which does not ignore it;\n"+
		"one `git add .` would commit the key. Ignore it:\n\n  echo %s >> %s",
		file, root, shellWord("/"+filepath.ToSlash(rel)), shellWord(filepath.Join(root, ".gitignore")))
}

// runGit asks git whether path is ignored in the work tree at root; ok is
// false when git cannot tell (not installed, or an error).
func runGit(root, path string) (ignored, ok bool) {
	err := exec.Command("git", "-C", root, "check-ignore", "-q", path).Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return true, true
	case errors.As(err, &ee) && ee.ExitCode() == 1:
		return false, true
	}
	return false, false
}
