// Package deploy_test checks the deploy files against the code, so that
// they cannot drift: the Dockerfile's build command builds a static,
// version-stamped binary whose health check answers; the compose file,
// the Kubernetes manifests and the systemd unit carry what one mnemo
// process needs (one owner per data folder, a volume, probes, secrets,
// a stop grace longer than shutdown.grace, hardening).
package deploy_test

import (
	"bytes"
	"debug/elf"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"go.yaml.in/yaml/v3"
)

// The secrets mnemo reads from the environment (they never go in YAML).
var secrets = []string{"OPENAI_API_KEY", "SLACK_BOT_TOKEN", "SLACK_APP_TOKEN", "DISCORD_BOT_TOKEN"}

// dataDir is where the image keeps memory and state (WORKDIR and VOLUME).
const dataDir = "/var/lib/mnemo"

// configFile is where the image reads its configuration (--config in
// ENTRYPOINT): deploy/mnemo.yaml until a file is mounted over it.
const configFile = "/etc/mnemo/mnemo.yaml"

// dockerfile is deploy/Dockerfile split into instructions, continuation
// lines joined and comments dropped.
type instruction struct{ op, args string }

func dockerfile(t *testing.T) []instruction {
	t.Helper()
	b, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	var out []instruction
	var cur string
	for _, line := range strings.Split(string(b), "\n") {
		trimmed := strings.TrimSpace(line)
		if cur == "" && (trimmed == "" || strings.HasPrefix(trimmed, "#")) {
			continue
		}
		if strings.HasSuffix(trimmed, "\\") {
			cur += strings.TrimSuffix(trimmed, "\\") + " "
			continue
		}
		cur += trimmed
		op, args, _ := strings.Cut(cur, " ")
		out = append(out, instruction{strings.ToUpper(op), strings.TrimSpace(args)})
		cur = ""
	}
	return out
}

// execForm decodes a JSON-array (exec form) argument list: no shell.
func execForm(t *testing.T, what, args string) []string {
	t.Helper()
	var v []string
	if err := json.Unmarshal([]byte(args), &v); err != nil || len(v) == 0 {
		t.Fatalf("%s %s is not in exec form (a JSON array): the image has no shell", what, args)
	}
	return v
}

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

const stamp = "v0.0.0-deploytest"

// binary builds mnemo with exactly the Dockerfile's build command (its
// RUN line with go build, VERSION set to stamp), from the repository
// root, once per test run.
func binary(t *testing.T) string {
	t.Helper()
	var cmdline string
	for _, in := range dockerfile(t) {
		if in.op == "RUN" && strings.Contains(in.args, "go build") {
			cmdline = in.args
		}
	}
	if cmdline == "" {
		t.Fatal("Dockerfile has no RUN with go build")
	}
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "mnemo-deploy-test")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "mnemo")
		script := strings.ReplaceAll(cmdline, "/out/mnemo", binPath)
		cmd := exec.Command("sh", "-c", script)
		cmd.Dir = ".."
		cmd.Env = append(os.Environ(), "VERSION="+stamp, "BUILDDATE=2026-01-02")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = errors.New(string(out) + err.Error())
		}
	})
	if buildErr != nil {
		t.Fatalf("the Dockerfile's build command failed: %v", buildErr)
	}
	return binPath
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}

func TestDockerfile(t *testing.T) {
	ins := dockerfile(t)
	var froms int
	var final []instruction // the last stage's instructions
	for _, in := range ins {
		if in.op == "FROM" {
			froms++
			final = nil
		}
		final = append(final, in)
	}
	if froms < 2 {
		t.Errorf("%d FROM stages; want a multi-stage build (build, then a small runtime image)", froms)
	}
	get := func(op string) []string {
		var v []string
		for _, in := range final {
			if in.op == op {
				v = append(v, in.args)
			}
		}
		return v
	}
	var build string
	for _, in := range ins {
		if in.op == "RUN" && strings.Contains(in.args, "go build") {
			build = in.args
		}
	}
	for _, want := range []string{"CGO_ENABLED=0", "-trimpath", "-X main.version=${VERSION}", "-X main.buildDate=${BUILDDATE}", "./cmd/mnemo"} {
		if !strings.Contains(build, want) {
			t.Errorf("the build command %q lacks %s", build, want)
		}
	}
	if u := get("USER"); len(u) != 1 || slices.Contains([]string{"0", "root", "0:0", "root:root"}, u[0]) {
		t.Errorf("runtime USER = %q; want one non-root user", u)
	}
	if v := get("VOLUME"); len(v) != 1 || !slices.Equal(execForm(t, "VOLUME", v[0]), []string{dataDir}) {
		t.Errorf("VOLUME = %q; want [%q]", v, dataDir)
	}
	if w := get("WORKDIR"); len(w) != 1 || w[0] != dataDir {
		t.Errorf("WORKDIR = %q; want %s (data/memory and data/state are relative to it)", w, dataDir)
	}
	entry := get("ENTRYPOINT")
	hc := get("HEALTHCHECK")
	if len(entry) != 1 || len(hc) != 1 {
		t.Fatalf("ENTRYPOINT %q, HEALTHCHECK %q: want one each", entry, hc)
	}
	ep := execForm(t, "ENTRYPOINT", entry[0])
	if ep[0] != "/usr/local/bin/mnemo" || !slices.Contains(ep, "0.0.0.0:9090") {
		t.Errorf("ENTRYPOINT %q: want /usr/local/bin/mnemo listening on every interface", ep)
	}
	if i := slices.Index(ep, "--config"); i < 0 || i+1 >= len(ep) || ep[i+1] != configFile {
		t.Errorf("ENTRYPOINT %q: want --config %s", ep, configFile)
	}
	if !slices.Contains(get("COPY"), "deploy/mnemo.yaml "+configFile) {
		t.Errorf("COPY %q: the image does not carry deploy/mnemo.yaml at %s", get("COPY"), configFile)
	}
	_, check, ok := strings.Cut(hc[0], "CMD ")
	if !ok {
		t.Fatalf("HEALTHCHECK %q has no CMD", hc[0])
	}
	if args := execForm(t, "HEALTHCHECK CMD", check); args[0] != ep[0] || args[len(args)-1] != "healthcheck" || !slices.Equal(args[:len(ep)], ep) {
		t.Errorf("HEALTHCHECK runs %q; want mnemo healthcheck with the ENTRYPOINT's flags %q", args, ep)
	}
}

// TestDockerBuildCommand builds with the Dockerfile's own command and runs
// the result: a static binary, the version stamped, and the HEALTHCHECK's
// arguments answered (against a stand-in /healthz on 127.0.0.1).
func TestDockerBuildCommand(t *testing.T) {
	bin := binary(t)
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("the binary asks for a dynamic loader; the runtime image has none (build with CGO_ENABLED=0)")
		}
	}
	if out, err := exec.Command(bin, "version").Output(); err != nil || !strings.HasPrefix(string(out), "mnemo "+stamp+" (") || !strings.Contains(string(out), "built 2026-01-02)") {
		t.Errorf("mnemo version = %q, %v; want the stamped %s", out, err, stamp)
	}

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" {
			io.WriteString(w, "ok\n")
			return
		}
		http.NotFound(w, r)
	}))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	var hc []string
	for _, in := range dockerfile(t) {
		if _, check, ok := strings.Cut(in.args, "CMD "); in.op == "HEALTHCHECK" && ok {
			hc = execForm(t, "HEALTHCHECK CMD", check)
		}
	}
	example, err := filepath.Abs("mnemo.yaml")
	if err != nil {
		t.Fatal(err)
	}
	healthcheck := func(config string) *exec.Cmd {
		args := slices.Clone(hc[1:])
		for i, a := range args {
			args[i] = strings.NewReplacer(":9090", ":"+port, configFile, config).Replace(a)
		}
		cmd := exec.Command(bin, args...)
		cmd.Dir = t.TempDir()
		cmd.Env = []string{"MNEMO_DATA_DIR=" + filepath.Join(cmd.Dir, "memory")}
		return cmd
	}
	// The image's own file (deploy/mnemo.yaml) and the Kubernetes
	// ConfigMap's both load.
	k8s := filepath.Join(t.TempDir(), "mnemo.yaml")
	if err := os.WriteFile(k8s, []byte(configMapFile(t)), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, config := range []string{example, k8s} {
		cmd := healthcheck(config)
		if out, err := cmd.CombinedOutput(); err != nil || string(out) != "ok\n" {
			t.Errorf("mnemo %q = %q, %v; want ok", cmd.Args[1:], out, err)
		}
	}
	cmd := healthcheck(example)
	srv.Close()
	again := exec.Command(bin, cmd.Args[1:]...)
	again.Dir, again.Env = cmd.Dir, cmd.Env
	if out, err := again.CombinedOutput(); err == nil {
		t.Errorf("healthcheck with nothing listening exited 0: %s", out)
	}
}

func readYAML(t *testing.T, name string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	var docs []map[string]any
	for {
		var d map[string]any
		if err := dec.Decode(&d); errors.Is(err, io.EOF) {
			return docs
		} else if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		docs = append(docs, d)
	}
}

// at walks a decoded YAML value by keys and indexes ("0").
func at(t *testing.T, v any, path ...any) any {
	t.Helper()
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				t.Fatalf("no %q at %v: %T", k, path, v)
			}
			v = m[k]
		case int:
			l, ok := v.([]any)
			if !ok || k >= len(l) {
				t.Fatalf("no [%d] at %v", k, path)
			}
			v = l[k]
		}
	}
	return v
}

func TestCompose(t *testing.T) {
	docs := readYAML(t, "docker-compose.yaml")
	if len(docs) != 1 {
		t.Fatalf("%d documents", len(docs))
	}
	svc := at(t, docs[0], "services", "mnemo")
	if df := at(t, svc, "build", "dockerfile"); df != "deploy/Dockerfile" {
		t.Errorf("build.dockerfile = %v", df)
	}
	if ctx := at(t, svc, "build", "context").(string); filepath.Clean(filepath.Join(".", ctx)) != ".." {
		t.Errorf("build.context = %q; want the repository root", ctx)
	}
	if v := at(t, svc, "volumes", 0).(string); !strings.HasSuffix(v, ":"+dataDir) {
		t.Errorf("volume %q is not mounted at %s", v, dataDir)
	}
	// The configuration file, mounted read-only where the image reads it.
	if v := at(t, svc, "volumes", 1).(string); v != "./mnemo.yaml:"+configFile+":ro" {
		t.Errorf("volume %q; want ./mnemo.yaml mounted read-only at %s", v, configFile)
	}
	if p := at(t, svc, "ports", 0).(string); !strings.HasSuffix(p, ":9090") {
		t.Errorf("port %q does not publish 9090", p)
	}
	if g := at(t, svc, "stop_grace_period"); g != "30s" {
		t.Errorf("stop_grace_period = %v; want 30s (more than shutdown.grace)", g)
	}
	if at(t, svc, "env_file") == nil {
		t.Error("no env_file for the secrets")
	}
	// Secrets and settings are not written in the compose file: the
	// settings are in the mounted file, the secrets in mnemo.env.
	if env := at(t, svc, "environment"); env != nil {
		t.Errorf("environment %v in the compose file; settings go in mnemo.yaml, secrets in mnemo.env", env)
	}
}

func TestKubernetes(t *testing.T) {
	docs := readYAML(t, "kubernetes/mnemo.yaml")
	kinds := map[string]map[string]any{}
	for _, d := range docs {
		kinds[d["kind"].(string)] = d
	}
	dep, pvc := kinds["Deployment"], kinds["PersistentVolumeClaim"]
	if dep == nil || pvc == nil || kinds["Service"] == nil {
		t.Fatalf("kinds %v; want Deployment, PersistentVolumeClaim and Service", slices.Collect(func(yield func(string) bool) {
			for k := range kinds {
				yield(k)
			}
		}))
	}
	if r := at(t, dep, "spec", "replicas"); r != 1 {
		t.Errorf("replicas = %v; one process owns a data folder", r)
	}
	if s := at(t, dep, "spec", "strategy", "type"); s != "Recreate" {
		t.Errorf("strategy %v; want Recreate (the old pod lets go of the volume first)", s)
	}
	pod := at(t, dep, "spec", "template", "spec")
	if g := at(t, pod, "terminationGracePeriodSeconds"); g.(int) <= 20 {
		t.Errorf("terminationGracePeriodSeconds %v; want more than shutdown.grace (20s)", g)
	}
	if at(t, pod, "securityContext", "runAsNonRoot") != true {
		t.Error("not runAsNonRoot")
	}
	c := at(t, pod, "containers", 0)
	if p := at(t, c, "livenessProbe", "httpGet", "path"); p != "/healthz" {
		t.Errorf("liveness probe %v", p)
	}
	if p := at(t, c, "readinessProbe", "httpGet", "path"); p != "/readyz" {
		t.Errorf("readiness probe %v", p)
	}
	if p := at(t, c, "ports", 0, "containerPort"); p != 9090 {
		t.Errorf("containerPort %v", p)
	}
	if m := at(t, c, "volumeMounts", 0, "mountPath"); m != dataDir {
		t.Errorf("mountPath %v; want %s", m, dataDir)
	}
	// The ConfigMap's mnemo.yaml, mounted read-only where the image reads
	// it, readable by the pod's group only.
	if m, ro := at(t, c, "volumeMounts", 1, "mountPath"), at(t, c, "volumeMounts", 1, "readOnly"); m != filepath.Dir(configFile) || ro != true {
		t.Errorf("config mount %v (readOnly %v); want %s read-only", m, ro, filepath.Dir(configFile))
	}
	if cm := kinds["ConfigMap"]; cm == nil || at(t, pod, "volumes", 1, "configMap", "name") != at(t, cm, "metadata", "name") {
		t.Errorf("the config volume %v is not the ConfigMap", at(t, pod, "volumes", 1))
	}
	if mode := at(t, pod, "volumes", 1, "configMap", "defaultMode"); mode != 0o440 {
		t.Errorf("the config's mode %v; want 0440 (the pod's group, fsGroup)", mode)
	}
	if args := at(t, c, "args"); !slices.Equal(args.([]any), []any{"serve"}) {
		t.Errorf("args %v; want [serve] (the image's ENTRYPOINT names --config)", args)
	}
	if claim, name := at(t, pod, "volumes", 0, "persistentVolumeClaim", "claimName"), at(t, pvc, "metadata", "name"); claim != name {
		t.Errorf("claimName %v, PVC %v", claim, name)
	}
	fromSecret := map[string]bool{}
	for _, e := range at(t, c, "env").([]any) {
		name := at(t, e, "name").(string)
		if at(t, e, "value") != nil {
			t.Errorf("%s is written in the manifest; settings go in the ConfigMap, secrets in the Secret", name)
		}
		if vf, ok := e.(map[string]any)["valueFrom"]; ok && at(t, vf, "secretKeyRef", "key") == name {
			fromSecret[name] = true
		}
	}
	for _, s := range secrets {
		if !fromSecret[s] {
			t.Errorf("%s is not taken from a Secret", s)
		}
	}
}

// configMapFile is the mnemo.yaml of the Kubernetes ConfigMap.
func configMapFile(t *testing.T) string {
	t.Helper()
	for _, d := range readYAML(t, "kubernetes/mnemo.yaml") {
		if d["kind"] == "ConfigMap" {
			if s, ok := at(t, d, "data", "mnemo.yaml").(string); ok {
				return s
			}
		}
	}
	t.Fatal("kubernetes/mnemo.yaml has no ConfigMap with a mnemo.yaml")
	return ""
}

func TestSystemdUnit(t *testing.T) {
	b, err := os.ReadFile("systemd/mnemo.service")
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]string{}
	section := ""
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "["):
			section = strings.Trim(line, "[]")
		default:
			k, v, _ := strings.Cut(line, "=")
			keys[section+"."+k] = v
		}
	}
	for k, want := range map[string]string{
		"Service.ExecStart":       "/usr/local/bin/mnemo --config ${CREDENTIALS_DIRECTORY}/mnemo.yaml serve",
		"Service.LoadCredential":  "mnemo.yaml:" + configFile,
		"Service.DynamicUser":     "yes",
		"Service.NoNewPrivileges": "yes",
		"Service.ProtectSystem":   "strict",
		"Service.ReadWritePaths":  dataDir,
		"Service.ProtectHome":     "yes",
		"Service.PrivateTmp":      "yes",
		"Service.Restart":         "on-failure",
		"Service.EnvironmentFile": "/etc/mnemo/mnemo.env",
		"Service.KillSignal":      "SIGTERM",
		"Service.TimeoutStopSec":  "30",
		"Install.WantedBy":        "multi-user.target",
	} {
		if keys[k] != want {
			t.Errorf("%s = %q, want %q", k, keys[k], want)
		}
	}
	// How to install the configuration file, with its owner and mode.
	if !strings.Contains(string(b), "install -m 0600 deploy/mnemo.yaml "+configFile) {
		t.Errorf("the unit's comment does not say how to install %s (mode 0600)", configFile)
	}
	if wd := keys["Service.WorkingDirectory"]; wd != dataDir || keys["Service.StateDirectory"] != "mnemo" {
		t.Errorf("WorkingDirectory %q, StateDirectory %q: the data folder must be %s", wd, keys["Service.StateDirectory"], dataDir)
	}

	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Log("systemd-analyze is not installed: the unit's syntax was not verified")
		return
	}
	// verify needs ExecStart to exist: point it at the built binary.
	unit := filepath.Join(t.TempDir(), "mnemo.service")
	text := regexp.MustCompile(`(?m)^ExecStart=/usr/local/bin/mnemo`).ReplaceAllString(string(b), "ExecStart="+binary(t))
	if err := os.WriteFile(unit, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(analyze, "verify", unit).CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
}

// TestReadmeDockerRun: the docker run of the README carries the config
// file (mounted read-only where the image reads it) and the secrets
// (--env-file), and the admin command it shows reads the same file.
func TestReadmeDockerRun(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.ReplaceAll(string(b), "\\\n", " ")
	var run, exec string
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "docker run "):
			run = line
		case strings.HasPrefix(line, "docker exec "):
			exec = line
		}
	}
	for _, want := range []string{"--env-file deploy/mnemo.env", ":" + configFile + ":ro", "-v mnemo-data:" + dataDir, "--stop-timeout 30"} {
		if !strings.Contains(run, want) {
			t.Errorf("the README's docker run %q lacks %s", run, want)
		}
	}
	if !strings.Contains(exec, "--config "+configFile) {
		t.Errorf("the README's docker exec %q does not read %s", exec, configFile)
	}
}
