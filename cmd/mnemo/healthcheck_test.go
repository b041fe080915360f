package main

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mnemo-agent/mnemo/bots/registry"
	"github.com/mnemo-agent/mnemo/cmd/internal/config"
)

func TestHealthURL(t *testing.T) {
	for _, tc := range []struct{ listen, want, err string }{
		{"127.0.0.1:9090", "http://127.0.0.1:9090/healthz", ""},
		{":9090", "http://127.0.0.1:9090/healthz", ""},
		{"0.0.0.0:9090", "http://127.0.0.1:9090/healthz", ""},
		{"[::]:9090", "http://[::1]:9090/healthz", ""},
		{"[::1]:8080", "http://[::1]:8080/healthz", ""},
		{"mnemo.internal:80", "http://mnemo.internal:80/healthz", ""},
		{"9090", "", `"9090" is not host:port`},
		{"127.0.0.1:0", "", "names no fixed port"},
		{"127.0.0.1:", "", "names no fixed port"},
	} {
		got, err := healthURL(tc.listen)
		if got != tc.want || (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("healthURL(%q) = %q, %v; want %q, error with %q", tc.listen, got, err, tc.want, tc.err)
		}
	}
}

// serveHealth answers /healthz with the given status and body on
// 127.0.0.1 and returns its port.
func serveHealth(t *testing.T, status int, body string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" || r.Method != http.MethodGet {
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(status)
		w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	return port
}

func TestHealthcheck(t *testing.T) {
	dir := inTempDir(t)
	env := map[string]string{"MNEMO_DATA_DIR": dir}
	healthy := serveHealth(t, 200, "ok\n")
	sick := serveHealth(t, 503, "stopping")
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := closed.Addr().String()
	closed.Close()

	// Every interface, as in the container: asked on the loopback.
	cli(t, env, "--listen", "0.0.0.0:"+healthy, "healthcheck").want(t, 0, "ok\n", "")
	cli(t, env, "healthcheck", "--listen", ":"+healthy).want(t, 0, "ok\n", "")
	cli(t, env, "--listen", "127.0.0.1:"+sick, "healthcheck").want(t, 1, "", `answered 503 Service Unavailable: "stopping"`)
	r := cli(t, env, "--listen", refused, "healthcheck")
	r.want(t, 1, "", "GET http://"+refused+"/healthz|connection refused|is mnemo serve running with server.listen (or --listen) "+refused)
	if n := strings.Count(r.stderr, "/healthz"); n != 1 {
		t.Errorf("the URL is said %d times:\n%s", n, r.stderr)
	}
	cli(t, env, "--listen", "127.0.0.1:0", "healthcheck").want(t, 2, "", "names no fixed port")
	cli(t, env, "healthcheck", "extra").want(t, 2, "", "healthcheck takes no arguments")
	cli(t, env, "healthcheck", "--nope").want(t, 2, "", "healthcheck")
}

func TestHealthcheckBadHost(t *testing.T) {
	cfg := config.Default(registry.Platforms()...)
	cfg.Server.Listen = "bad host:80"
	var out strings.Builder
	err := runHealthcheck(context.Background(), &cliEnv{stdout: &out}, cfg, nil)
	if code := exitCode(err, &out); code != 2 || !strings.Contains(out.String(), "bad host:80 is not a usable address") {
		t.Errorf("exit %d, %q", code, out.String())
	}
}
