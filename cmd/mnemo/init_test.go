package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"testing/iotest"

	"github.com/mnemo-agent/mnemo/agent/openaitest"
	"github.com/mnemo-agent/mnemo/bots/registry"
	"github.com/mnemo-agent/mnemo/cmd/internal/config"
)

// initRun runs mnemo init in dir with answers on stdin.
func initRun(t *testing.T, env map[string]string, answers string, args ...string) cliResult {
	t.Helper()
	var out, errOut bytes.Buffer
	err := run(stopOn(context.Background()), append([]string{"init"}, args...), func(k string) string { return env[k] }, strings.NewReader(answers), &out, &errOut)
	return cliResult{exitCode(err, &errOut), out.String(), errOut.String()}
}

// noOllama points the Ollama probe at a closed port.
const noOllama = "http://127.0.0.1:1/v1"

// loaded reads the written configuration as mnemo would, with no
// environment.
func loaded(t *testing.T, file string) *config.Config {
	t.Helper()
	cfg, err := config.Load(file, true, func(string) string { return "" }, registry.Platforms()...)
	if err != nil {
		t.Fatalf("the written %s does not load: %v", file, err)
	}
	return cfg
}

func fileMode(t *testing.T, name string) os.FileMode {
	t.Helper()
	fi, err := os.Stat(name)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

func TestInitInteractive(t *testing.T) {
	dir := inTempDir(t)
	srv := openaitest.New(t)
	srv.SetModels("gpt-4o-mini", "llama3.2")
	srv.Enqueue(openaitest.Text("ok"))
	env := map[string]string{"MNEMO_OLLAMA_URL": noOllama, "USER": "alice"}

	r := initRun(t, env, srv.URL()+"\nsk-test-key\nllama3.2\n")
	r.want(t, 0, "Wrote mnemo.yaml and mnemo.env (the API key, mode 0600).\nNext, talk to mnemo in this terminal:\n\n  set -a; . ./mnemo.env; set +a\n  mnemo chat --user alice\n\nFor Slack or Discord, uncomment their token lines in mnemo.env and fill them in", "Model server (OpenAI-compatible base URL) [https://api.openai.com/v1]: |The server offers: gpt-4o-mini, llama3.2.|Model [gpt-4o-mini]: |It answers.")
	cfg := loaded(t, filepath.Join(dir, "mnemo.yaml"))
	if cfg.LLM.BaseURL != srv.URL() || cfg.LLM.Model != "llama3.2" || cfg.LLM.APIKey != "" {
		t.Errorf("config: baseURL %q, model %q, key %q", cfg.LLM.BaseURL, cfg.LLM.Model, cfg.LLM.APIKey)
	}
	yml, _ := os.ReadFile(filepath.Join(dir, "mnemo.yaml"))
	if strings.Contains(string(yml), "sk-test-key") {
		t.Error("the key is in the YAML")
	}
	secret, _ := os.ReadFile(filepath.Join(dir, "mnemo.env"))
	if string(secret) != envFileText("sk-test-key") || !strings.Contains(string(secret), "\nOPENAI_API_KEY=sk-test-key\n# Slack") || fileMode(t, filepath.Join(dir, "mnemo.env")) != 0o600 {
		t.Errorf("mnemo.env = %q, mode %v", secret, fileMode(t, filepath.Join(dir, "mnemo.env")))
	}
	reqs := srv.Requests()
	if len(reqs) != 1 || reqs[0].Chat.Model != "llama3.2" || reqs[0].Header.Get("Authorization") != "Bearer sk-test-key" {
		t.Fatalf("the check request: %+v", reqs)
	}
	if strings.Contains(r.stderr, "sk-test-key") {
		t.Error("the key was echoed")
	}

	// A second init does not overwrite what the first wrote.
	initRun(t, env, "").want(t, 1, "", "mnemo.yaml already exists; edit it, or run mnemo init --force to replace it")
}

func TestInitOllamaDefaults(t *testing.T) {
	dir := inTempDir(t)
	srv := openaitest.New(t)
	srv.SetModels("qwen3", "llama3.2")
	srv.Enqueue(openaitest.Text("ok"))
	// Enter to every question: the local Ollama, no key, its first model.
	r := initRun(t, map[string]string{"MNEMO_OLLAMA_URL": srv.URL()}, "\n\n\n")
	r.want(t, 0, "Wrote mnemo.yaml and mnemo.env (mode 0600, no secret yet).\n", "A local Ollama answers at "+srv.URL()+"|usually needs no key|Model [llama3.2]: ")
	if cfg := loaded(t, filepath.Join(dir, "mnemo.yaml")); cfg.LLM.BaseURL != srv.URL() || cfg.LLM.Model != "llama3.2" {
		t.Errorf("config %+v", cfg.LLM)
	}
	// Without a key, mnemo.env is written all the same (0600), every token
	// line commented, ready for the platform tokens the next step names.
	secret, err := os.ReadFile(filepath.Join(dir, "mnemo.env"))
	if err != nil || fileMode(t, filepath.Join(dir, "mnemo.env")) != 0o600 {
		t.Fatalf("mnemo.env: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(secret)), "\n") {
		if !strings.HasPrefix(line, "#") {
			t.Errorf("mnemo.env without a key has a line that sets something: %q", line)
		}
	}
	for _, v := range []string{"# OPENAI_API_KEY=", "# SLACK_BOT_TOKEN=xoxb-", "# SLACK_APP_TOKEN=xapp-", "# DISCORD_BOT_TOKEN="} {
		if !strings.Contains(string(secret), v) {
			t.Errorf("mnemo.env has no %q", v)
		}
	}
	if !strings.Contains(r.stdout, "For Slack or Discord, uncomment their token lines in mnemo.env and fill them in") || !strings.Contains(r.stdout, "set -a; . ./mnemo.env; set +a\n  mnemo serve\n") {
		t.Errorf("the next step for Slack or Discord: %s", r.stdout)
	}
	if h := srv.Requests()[0].Header.Get("Authorization"); h != "" {
		t.Errorf("Authorization %q sent with no key", h)
	}

	// Input that ends early takes the defaults too.
	os.Remove(filepath.Join(dir, "mnemo.yaml"))
	os.Remove(filepath.Join(dir, "mnemo.env"))
	srv.Enqueue(openaitest.Text("ok"))
	initRun(t, map[string]string{"MNEMO_OLLAMA_URL": srv.URL()}, "").want(t, 0, "Wrote mnemo.yaml and mnemo.env", "")
	if cfg := loaded(t, filepath.Join(dir, "mnemo.yaml")); cfg.LLM.BaseURL != srv.URL() {
		t.Errorf("config %+v", cfg.LLM)
	}
}

func TestInitRetriesAfterAFailedCheck(t *testing.T) {
	dir := inTempDir(t)
	srv := openaitest.New(t)
	srv.SetModels("gpt-4o-mini")
	srv.Enqueue(openaitest.Error(401, "invalid_api_key", "Incorrect API key provided"), openaitest.Text("ok"))
	// A bad URL is asked again; the refused key is asked again, the rest kept.
	answers := "ftp://x\n" + srv.URL() + "\nsk-bad\n\n" + "\nsk-good\n\n"
	r := initRun(t, map[string]string{"MNEMO_OLLAMA_URL": noOllama}, answers)
	r.want(t, 0, "Wrote mnemo.yaml and mnemo.env", `"ftp://x" is not an http(s) URL|the check failed|HTTP 401|give the API key the provider issued|Let's try again|API key (empty for none) [set; Enter keeps it]: `)
	if secret, _ := os.ReadFile(filepath.Join(dir, "mnemo.env")); !strings.Contains(string(secret), "OPENAI_API_KEY=sk-good\n") {
		t.Errorf("mnemo.env = %q", secret)
	}
}

func TestInitNonInteractive(t *testing.T) {
	srv := openaitest.New(t)
	srv.SetModels("gpt-4o-mini", "llama3.2")
	env := map[string]string{"MNEMO_OLLAMA_URL": noOllama, "OPENAI_API_KEY": "sk-from-env"}

	t.Run("unknown model", func(t *testing.T) {
		dir := inTempDir(t)
		srv.Enqueue(openaitest.Error(404, "model_not_found", "The model `gpt-9` does not exist"))
		r := initRun(t, env, "", "--yes", "--base-url", srv.URL(), "--model", "gpt-9")
		r.want(t, 1, "", "init: the check failed, nothing written|HTTP 404|the server offers: gpt-4o-mini, llama3.2")
		if n := strings.Count(r.stderr, "HTTP 404"); n != 1 { // said once (issue 25, item 6)
			t.Errorf("the error is said %d times:\n%s", n, r.stderr)
		}
		if m, _ := filepath.Glob(filepath.Join(dir, "*")); len(m) != 0 {
			t.Errorf("written after a failed check: %v", m)
		}
	})
	t.Run("nothing listens", func(t *testing.T) {
		inTempDir(t)
		initRun(t, env, "", "--yes", "--base-url", noOllama).want(t, 1, "", "the server did not list its models|Checking gpt-4o-mini|connection refused: nothing listens at that address on this machine; start the model server")
	})
	t.Run("the connection drops", func(t *testing.T) {
		inTempDir(t)
		drop := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
				conn.Close()
			}
		}))
		defer drop.Close()
		initRun(t, env, "", "--yes", "--base-url", drop.URL+"/v1").want(t, 1, "", "model server unavailable|nothing answered there: check the address")
	})
	t.Run("flags, the key from the environment, another file", func(t *testing.T) {
		dir := inTempDir(t)
		srv.Enqueue(openaitest.Text("ok"))
		cfgFile := filepath.Join(dir, "etc", "mnemo.yaml")
		os.Mkdir(filepath.Dir(cfgFile), 0o755)
		r := initRun(t, env, "", "--config", cfgFile, "--yes", "--base-url", srv.URL(), "--model", "llama3.2")
		r.want(t, 0, "Wrote "+cfgFile+" and "+filepath.Join(dir, "etc", "mnemo.env"), "")
		r.want(t, 0, "mnemo --config "+cfgFile+" chat", "")
		if cfg := loaded(t, cfgFile); cfg.LLM.Model != "llama3.2" {
			t.Errorf("model %q", cfg.LLM.Model)
		}
		if secret, _ := os.ReadFile(filepath.Join(dir, "etc", "mnemo.env")); !strings.Contains(string(secret), "OPENAI_API_KEY=sk-from-env\n") {
			t.Errorf("env file %q", secret)
		}
	})
	t.Run("force replaces, and the key file stays private", func(t *testing.T) {
		dir := inTempDir(t)
		os.WriteFile("mnemo.yaml", []byte("llm:\n  model: old\n"), 0o644)
		os.WriteFile("mnemo.env", []byte("OPENAI_API_KEY=old\n"), 0o644)
		srv.Enqueue(openaitest.Text("ok"))
		initRun(t, env, "", "--yes", "--base-url", srv.URL(), "--api-key", "sk-flag", "--env-file", "secrets.env").want(t, 1, "", "mnemo.yaml already exists")
		initRun(t, env, "", "--yes", "--force", "--base-url", srv.URL(), "--api-key", "sk-flag", "--env-file", "mnemo.env").want(t, 0, "set -a; . ./mnemo.env; set +a", "")
		if cfg := loaded(t, filepath.Join(dir, "mnemo.yaml")); cfg.LLM.Model != "gpt-4o-mini" {
			t.Errorf("model %q", cfg.LLM.Model)
		}
		if m := fileMode(t, "mnemo.env"); m != 0o600 {
			t.Errorf("replaced env file mode %v, want 0600", m)
		}
	})
	t.Run("force replaces a link, never writes through it", func(t *testing.T) {
		inTempDir(t)
		elsewhere := t.TempDir()
		victims := map[string]string{"mnemo.yaml": "theirs: yaml\n", "mnemo.env": "THEIRS=1\n"}
		for name, text := range victims {
			target := filepath.Join(elsewhere, name)
			if err := os.WriteFile(target, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, name); err != nil {
				t.Fatal(err)
			}
		}
		srv.Enqueue(openaitest.Text("ok"))
		initRun(t, env, "", "--yes", "--force", "--base-url", srv.URL(), "--api-key", "sk-flag").want(t, 0, "set -a; . ./mnemo.env; set +a", "")
		for name, text := range victims {
			target := filepath.Join(elsewhere, name)
			if b, _ := os.ReadFile(target); string(b) != text || fileMode(t, target) != 0o644 {
				t.Errorf("the target of %s was changed: %q, %v", name, b, fileMode(t, target))
			}
			if fi, err := os.Lstat(name); err != nil || !fi.Mode().IsRegular() {
				t.Errorf("%s is %v, %v; want a file of its own", name, fi, err)
			}
		}
		if m := fileMode(t, "mnemo.env"); m != 0o600 {
			t.Errorf("env file mode %v, want 0600", m)
		}
		if b, _ := os.ReadFile("mnemo.env"); !strings.Contains(string(b), "OPENAI_API_KEY=sk-flag\n") {
			t.Errorf("env file %q", b)
		}
	})
	t.Run("usage", func(t *testing.T) {
		inTempDir(t)
		initRun(t, env, "", "--yes", "--base-url", "localhost:11434").want(t, 2, "", `--base-url: "localhost:11434" is not an http(s) URL`)
		initRun(t, env, "", "extra").want(t, 2, "", "init takes no arguments")
		initRun(t, env, "", "--nope").want(t, 2, "", "init")
	})
}

// TestInitStdinFails: a read error on stdin at any question ends init
// with the reason, and nothing is written.
func TestInitStdinFails(t *testing.T) {
	srv := openaitest.New(t)
	srv.SetModels("gpt-4o-mini")
	env := map[string]string{"MNEMO_OLLAMA_URL": noOllama}
	for _, answered := range []string{"", srv.URL() + "\n", srv.URL() + "\nsk-key\n"} {
		dir := inTempDir(t)
		var out, errOut bytes.Buffer
		stdin := io.MultiReader(strings.NewReader(answered), iotest.ErrReader(errors.New("stdin broke")))
		err := run(stopOn(context.Background()), []string{"init"}, func(k string) string { return env[k] }, stdin, &out, &errOut)
		cliResult{exitCode(err, &errOut), out.String(), errOut.String()}.want(t, 1, "", "init: read the answer: stdin broke")
		if m, _ := filepath.Glob(filepath.Join(dir, "*")); len(m) != 0 {
			t.Errorf("after %q: written %v", answered, m)
		}
	}
}

// With a key at hand and no address, init offers OpenAI's and never asks
// the local Ollama port: whoever listens there (any local user can) would
// otherwise be offered and then sent the key. Without a key, it asks.
func TestInitDoesNotProbeOllamaWithAKey(t *testing.T) {
	var asked atomic.Int32
	ollama := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		w.Write([]byte(`{"object":"list","data":[]}`))
	}))
	defer ollama.Close()
	env := map[string]string{"MNEMO_OLLAMA_URL": ollama.URL + "/v1"}
	c := &initCmd{env: &cliEnv{getenv: func(k string) string { return env[k] }, stderr: io.Discard}, http: ollama.Client()}
	if got := c.defaultBaseURL(context.Background(), initSetup{apiKey: "sk-secret"}); got != config.OpenAIBaseURL || asked.Load() != 0 {
		t.Errorf("with a key: offered %s, the Ollama port asked %d times; want %s, never", got, asked.Load(), config.OpenAIBaseURL)
	}
	if got := c.defaultBaseURL(context.Background(), initSetup{}); got != ollama.URL+"/v1" || asked.Load() == 0 {
		t.Errorf("without a key: offered %s, the Ollama port asked %d times; want it asked and offered", got, asked.Load())
	}
}

// A password written into the server's address is not printed.
func TestInitCheckingLineHidesAPassword(t *testing.T) {
	srv := openaitest.New(t)
	srv.SetModels("m")
	u := strings.Replace(srv.URL(), "http://", "http://user:hunter2@", 1)
	inTempDir(t)
	r := initRun(t, map[string]string{"MNEMO_OLLAMA_URL": noOllama}, "", "--yes", "--base-url", u, "--model", "m")
	if !strings.Contains(r.stderr, "Checking m at ") || strings.Contains(r.stderr, "hunter2") {
		t.Errorf("stderr shows the password or no check:\n%s", r.stderr)
	}
}

// init does not write a key into a folder every user may write to (one
// could swap mnemo.env before the next step sources it); nothing is
// written, and the error says where to run it instead.
func TestInitRefusesAWorldWritableFolder(t *testing.T) {
	srv := openaitest.New(t)
	srv.SetModels("m")
	srv.Enqueue(openaitest.Text("ok"), openaitest.Text("ok"), openaitest.Text("ok"))
	dir := inTempDir(t)
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"MNEMO_OLLAMA_URL": noOllama, "OPENAI_API_KEY": "sk-secret"}
	initRun(t, env, "", "--yes", "--base-url", srv.URL(), "--model", "m").want(t, 1, "", "is writable by every user (mode -rwxrwxrwx): another user could replace mnemo.env, which the next step runs in your shell")
	if m, _ := filepath.Glob(filepath.Join(dir, "*")); len(m) != 0 {
		t.Errorf("written: %v", m)
	}
	// Without a key there is no secret to protect: the configuration is
	// written, and how to make the env file elsewhere is said.
	initRun(t, map[string]string{"MNEMO_OLLAMA_URL": noOllama}, "", "--yes", "--base-url", srv.URL(), "--model", "m").want(t, 0,
		"Wrote mnemo.yaml.\n", "")
	r := initRun(t, map[string]string{"MNEMO_OLLAMA_URL": noOllama}, "", "--yes", "--force", "--base-url", srv.URL(), "--model", "m")
	if !strings.Contains(r.stdout, "mnemo.env was not written: . is writable by every user") || !strings.Contains(r.stdout, "install -m 0600 /dev/null ~/mnemo.env") {
		t.Errorf("how to make the env file is not said:\n%s", r.stdout)
	}
	if _, err := os.Stat(filepath.Join(dir, "mnemo.env")); !os.IsNotExist(err) {
		t.Error("mnemo.env written in a folder every user may write to")
	}
}

// The next step init prints runs as written: the binary as it was
// invoked, with --user (issue 25, item 2: "mnemo chat" when only
// bin/mnemo exists).
func TestInitNextStepAsInvoked(t *testing.T) {
	for self, want := range map[string]string{"bin/mnemo": "bin/mnemo", "./mnemo": "./mnemo", "mnemo": "mnemo", "": "mnemo", "/opt/my tools/mnemo": "'/opt/my tools/mnemo'"} {
		if got := invokedAs(self); got != want {
			t.Errorf("invokedAs(%q) = %q, want %q", self, got, want)
		}
	}
	inTempDir(t)
	srv := openaitest.New(t)
	srv.Enqueue(openaitest.Text("ok"))
	var out, errOut bytes.Buffer
	env := map[string]string{"MNEMO_OLLAMA_URL": noOllama, "USER": "bad/name"}
	err := runWith(stopOn(context.Background()), []string{"init", "--yes", "--base-url", srv.URL(), "--model", "m"},
		cliEnv{getenv: func(k string) string { return env[k] }, stdin: strings.NewReader(""), stdout: &out, stderr: &errOut, self: "bin/mnemo"})
	if err != nil || !strings.Contains(out.String(), "\n  bin/mnemo chat --user console\n") || !strings.Contains(out.String(), "\n  bin/mnemo serve\n") ||
		strings.Contains(errOut.String(), "press Enter") { // --yes asks nothing
		t.Fatalf("init: %v\n%s%s", err, out.String(), errOut.String())
	}
}

// A key written into a git work tree that does not ignore it is one
// `git add .` from a commit: init says so and how to ignore it (issue 25,
// item 1).
func TestInitWarnsAboutAnUnignoredKey(t *testing.T) {
	dir := inTempDir(t)
	if err := os.Mkdir(filepath.Join(dir, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	c := &initCmd{envFile: "mnemo.env", git: func(root, path string) (bool, bool) { return false, true }}
	hint := c.gitHint("mnemo.env")
	if !strings.Contains(hint, "lies in the git work tree "+dir) || !strings.Contains(hint, "echo /mnemo.env >> "+filepath.Join(dir, ".gitignore")) {
		t.Errorf("hint:\n%s", hint)
	}
	c.git = func(root, path string) (bool, bool) { return true, true }
	if hint := c.gitHint("mnemo.env"); hint != "" {
		t.Errorf("an ignored file got a hint: %s", hint)
	}
	c.git = func(root, path string) (bool, bool) { return false, false } // git cannot tell
	if hint := c.gitHint("mnemo.env"); hint != "" {
		t.Errorf("a guess got a hint: %s", hint)
	}
	if hint := (&initCmd{}).gitHint(filepath.Join(t.TempDir(), "mnemo.env")); hint != "" {
		t.Errorf("outside a work tree: %s", hint)
	}

	// With git itself, through the binary's code path.
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed: the rest needs it")
	}
	if out, err := exec.Command("git", "init", "-q", dir).CombinedOutput(); err != nil {
		os.RemoveAll(filepath.Join(dir, ".git"))
		if out, err = exec.Command("git", "init", "-q", dir).CombinedOutput(); err != nil {
			t.Fatalf("git init: %v %s", err, out)
		}
	}
	srv := openaitest.New(t)
	srv.Enqueue(openaitest.Text("ok"), openaitest.Text("ok"))
	env := map[string]string{"MNEMO_OLLAMA_URL": noOllama, "USER": "alice", "OPENAI_API_KEY": "sk-test-key"}
	r := initRun(t, env, "", "--yes", "--base-url", srv.URL(), "--model", "m")
	r.want(t, 0, "one `git add .` would commit the key. Ignore it:\n\n  echo /mnemo.env >> "+filepath.Join(dir, ".gitignore")+"\n", "")
	if err := os.WriteFile(filepath.Join(dir, ".gitignore"), []byte("/mnemo.env\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r = initRun(t, env, "", "--yes", "--force", "--base-url", srv.URL(), "--model", "m")
	if r.code != 0 || strings.Contains(r.stdout, "git add") {
		t.Errorf("an ignored key still warned (exit %d):\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// A key the server refuses when init lists its models is said at once and
// asked again; the model is not asked for with a key known to be wrong
// (issue 25, item 6).
func TestInitKeyRefusedByTheModelList(t *testing.T) {
	dir := inTempDir(t)
	var chats atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.Header.Get("Authorization") != "Bearer sk-good" {
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}`)
			return
		}
		if r.URL.Path == "/v1/models" {
			io.WriteString(w, `{"object":"list","data":[{"id":"m1","object":"model","created":1,"owned_by":"x"}]}`)
			return
		}
		chats.Add(1)
		io.WriteString(w, `{"id":"c1","object":"chat.completion","created":1,"model":"m1","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}`)
	}))
	defer srv.Close()
	env := map[string]string{"MNEMO_OLLAMA_URL": noOllama, "USER": "alice"}
	r := initRun(t, env, srv.URL+"/v1\nsk-bad\n\nsk-good\n\n")
	r.want(t, 0, "Wrote mnemo.yaml and mnemo.env", "the check failed: list the models at "+srv.URL+"/v1: the model server refused the credentials|give the API key the provider issued|Let's try again")
	if strings.Count(r.stderr, "Model [") != 1 || chats.Load() != 1 {
		t.Errorf("the model was asked for %d times, %d chat checks:\n%s", strings.Count(r.stderr, "Model ["), chats.Load(), r.stderr)
	}
	if secret, _ := os.ReadFile(filepath.Join(dir, "mnemo.env")); !strings.Contains(string(secret), "OPENAI_API_KEY=sk-good") {
		t.Errorf("mnemo.env = %q", secret)
	}
	// With --yes: said once, nothing written.
	inTempDir(t)
	env["OPENAI_API_KEY"] = "sk-bad"
	r = initRun(t, env, "", "--yes", "--base-url", srv.URL+"/v1")
	r.want(t, 1, "", "init: the check failed, nothing written: list the models at")
	if strings.Count(r.stderr, "refused the credentials") != 1 {
		t.Errorf("said %d times:\n%s", strings.Count(r.stderr, "refused the credentials"), r.stderr)
	}
}
