package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	neturl "net/url"
	"time"

	"github.com/mnemo-agent/mnemo/cmd/internal/config"
)

// healthTimeout bounds `mnemo healthcheck`: container runtimes kill a
// check that outlives their own timeout (5s in deploy/Dockerfile).
const healthTimeout = 4 * time.Second

// healthcheckFlags returns runHealthcheck; healthcheck has no flags of
// its own (--listen and --config are global).
func healthcheckFlags(*flag.FlagSet) (runner, string) { return runHealthcheck, "mnemo healthcheck" }

// runHealthcheck is `mnemo healthcheck`: GET /healthz of the local serve
// (server.listen or --listen) and exit 0 when it answers 200. It is the
// container health check, so it needs no shell or curl in the image.
func runHealthcheck(ctx context.Context, env *cliEnv, cfg *config.Config, args []string) error {
	if len(args) > 0 {
		return usageError("healthcheck takes no arguments; it asks the address in server.listen or --listen")
	}
	url, err := healthURL(cfg.Server.Listen)
	if err != nil {
		return configError(err)
	}
	ctx, cancel := context.WithTimeout(ctx, healthTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return configError(fmt.Errorf("healthcheck: %s is not a usable address: %w; set server.listen or --listen to host:port", cfg.Server.Listen, err))
	}
	client := &http.Client{Transport: &http.Transport{Proxy: nil}} // never via a proxy: it is this machine
	defer client.CloseIdleConnections()
	resp, err := client.Do(req)
	if ue := (*neturl.Error)(nil); errors.As(err, &ue) {
		err = ue.Err // its "Get URL:" would say the URL twice
	}
	if err != nil {
		return failure(fmt.Errorf("healthcheck: GET %s: %w; is mnemo serve running with server.listen (or --listen) %s?", url, err, cfg.Server.Listen))
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode != http.StatusOK {
		return failure(fmt.Errorf("healthcheck: GET %s answered %s: %q", url, resp.Status, body))
	}
	_, err = fmt.Fprintln(env.stdout, "ok")
	return err
}

// healthURL is the /healthz URL of a serve listening on listen. An address
// that listens on every interface (":9090", "0.0.0.0:9090", "[::]:9090")
// is asked on the loopback.
func healthURL(listen string) (string, error) {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return "", fmt.Errorf("healthcheck: server.listen %q is not host:port (%w); set it or --listen like 127.0.0.1:9090", listen, err)
	}
	if port == "" || port == "0" {
		return "", fmt.Errorf("healthcheck: server.listen %q names no fixed port; set it or --listen like 127.0.0.1:9090", listen)
	}
	switch host {
	case "", "0.0.0.0":
		host = "127.0.0.1"
	case "::":
		host = "::1"
	}
	return "http://" + net.JoinHostPort(host, port) + "/healthz", nil
}
