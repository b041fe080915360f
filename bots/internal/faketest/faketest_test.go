package faketest

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"go.uber.org/goleak"

	"github.com/mnemo-agent/mnemo/bots/internal/fakewait"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// tinyFake is the smallest fake server: WebSocket connections at /ws, kept
// until Shutdown.
type tinyFake struct {
	mu       sync.Mutex
	changes  fakewait.Changes
	closed   bool
	wg       sync.WaitGroup
	upgrader websocket.Upgrader
	conns    []*websocket.Conn
	stops    int
}

func TestListenUpgradeShutdown(t *testing.T) {
	f := &tinyFake{}
	mux := http.NewServeMux()
	mux.HandleFunc("/ws", func(w http.ResponseWriter, r *http.Request) {
		ws := Upgrade(w, r, &f.upgrader, &f.mu, &f.closed)
		if ws == nil {
			return
		}
		f.conns = append(f.conns, ws)
		f.changes.NotifyLocked()
		f.mu.Unlock()
	})
	srv := Listen(t, "fake", mux)
	if !strings.HasPrefix(srv.URL, "http://127.0.0.1:") {
		t.Fatalf("listening at %s", srv.URL)
	}
	wsURL := "ws" + strings.TrimPrefix(srv.URL, "http") + "/ws"
	client, _, err := websocket.DefaultDialer.Dial(wsURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	if !f.changes.Wait(&f.mu, 10*time.Second, func() bool { return len(f.conns) == 1 }) {
		t.Fatal("the connection was not kept")
	}
	// A plain request is answered by the upgrader.
	resp, err := http.Get(srv.URL + "/ws")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("plain GET: %d", resp.StatusCode)
	}

	stop := func() []*websocket.Conn { f.stops++; return f.conns }
	Shutdown(&f.mu, &f.closed, &f.changes, &f.wg, srv, stop)
	Shutdown(&f.mu, &f.closed, &f.changes, &f.wg, srv, stop) // once only
	if f.stops != 1 || !f.closed {
		t.Fatalf("stopped %d times, closed %v", f.stops, f.closed)
	}
	// The server's side of the connection is closed.
	_ = client.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, _, err := client.ReadMessage(); err == nil {
		t.Fatal("the connection is still open")
	}
}

func TestUpgradeClosed(t *testing.T) {
	var (
		mu     sync.Mutex
		closed = true
		up     websocket.Upgrader
	)
	// Closed before: refused with 503.
	srv := Listen(t, "fake", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ws := Upgrade(w, r, &up, &mu, &closed); ws != nil {
			t.Error("upgraded a closed fake")
			mu.Unlock()
		}
	}))
	defer srv.Close()
	_, resp, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	if err == nil || resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("dial of a closed fake: %v %v", resp, err)
	}
	// Closed during the handshake: the connection is closed at once.
	var mu2 sync.Mutex
	closed2 := false
	up2 := websocket.Upgrader{CheckOrigin: func(*http.Request) bool {
		mu2.Lock()
		closed2 = true
		mu2.Unlock()
		return true
	}}
	srv2 := Listen(t, "fake", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ws := Upgrade(w, r, &up2, &mu2, &closed2); ws != nil {
			t.Error("kept a connection of a fake closed during the handshake")
			mu2.Unlock()
		}
	}))
	defer srv2.Close()
	c, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(srv2.URL, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, _, err := c.ReadMessage(); err == nil {
		t.Fatal("the connection is still open")
	}
}

func TestFaults(t *testing.T) {
	var fs Faults[string]
	if _, ok := fs.Take("GET /x", true); ok {
		t.Fatal("a fault from an empty queue")
	}
	fs.Add("POST /api/", 1, "short")
	fs.Add("POST /api/channels/", 2, "long")
	fs.Add("chat.postMessage", 1, "exact")
	// The longest matching route wins; each call consumes one.
	for _, want := range []string{"long", "long", "short"} {
		if f, ok := fs.Take("POST /api/channels/1/messages", true); !ok || f != want {
			t.Fatalf("Take = %q %v; want %q", f, ok, want)
		}
	}
	if _, ok := fs.Take("POST /api/channels/1/messages", true); ok {
		t.Fatal("a fault left after the queue ran out")
	}
	// Without prefix, only the route equal to the key.
	if _, ok := fs.Take("chat.post", false); ok {
		t.Fatal("a prefix matched an exact route")
	}
	if f, ok := fs.Take("chat.postMessage", false); !ok || f != "exact" {
		t.Fatalf("exact Take = %q %v", f, ok)
	}
	fs.Add("x", 3, "gone")
	fs.Clear()
	if _, ok := fs.Take("x", false); ok {
		t.Fatal("a fault survived Clear")
	}
}

func TestRecords(t *testing.T) {
	var (
		mu      sync.Mutex
		changes fakewait.Changes
		list    []string
	)
	errTimeout := errors.New("fake: timed out")
	get := func() []string { return Copy(&mu, &list, nil) }
	count := func() int { return len(list) }
	go func() {
		mu.Lock()
		list = append(list, "a", "b")
		changes.NotifyLocked()
		mu.Unlock()
	}()
	got, err := WaitRecords(&changes, &mu, errTimeout, 2, 10*time.Second, "records", count, get)
	if err != nil || strings.Join(got, ",") != "a,b" {
		t.Fatalf("WaitRecords = %q, %v", got, err)
	}
	got, err = WaitRecords(&changes, &mu, errTimeout, 3, time.Millisecond, "records", count, get)
	if !errors.Is(err, errTimeout) || err.Error() != "fake: timed out: 2 of 3 records" || len(got) != 2 {
		t.Fatalf("WaitRecords past its time = %q, %v", got, err)
	}
	if err := WaitCount(&changes, &mu, errTimeout, 2, 10*time.Second, "records", count); err != nil {
		t.Fatalf("WaitCount = %v", err)
	}
	if err := WaitCount(&changes, &mu, errTimeout, 3, time.Millisecond, "records", count); !errors.Is(err, errTimeout) ||
		err.Error() != "fake: timed out: 2 of 3 records" {
		t.Fatalf("WaitCount past its time = %v", err)
	}

	// Copies: changing them leaves the records as they are.
	up := Copy(&mu, &list, strings.ToUpper)
	up[0] = "z"
	if strings.Join(up, ",") != "z,B" || list[0] != "a" {
		t.Fatalf("Copy = %q, records %q", up, list)
	}
	if n := Locked(&mu, func() int { return len(list) }); n != 2 {
		t.Fatalf("Locked = %d", n)
	}
	sel := Select(list, func(s string) bool { return s == "b" }, strings.ToUpper)
	if strings.Join(sel, ",") != "B" {
		t.Fatalf("Select = %q", sel)
	}
	if none := Select(list, func(string) bool { return false }, strings.ToUpper); none != nil {
		t.Fatalf("Select of nothing = %#v; want nil", none)
	}
}

func TestHelpers(t *testing.T) {
	if h := RandomHex(16); len(h) != 32 || strings.Trim(h, "0123456789abcdef") != "" || h == RandomHex(16) {
		t.Fatalf("RandomHex = %q", h)
	}
	v := url.Values{"a": {"1", "2"}}
	c := CloneValues(v)
	c["a"][0] = "x"
	if v["a"][0] != "1" || len(c["a"]) != 2 {
		t.Fatalf("CloneValues shares its lists: %v %v", v, c)
	}
	if CloneValues(nil) == nil {
		t.Fatal("CloneValues(nil) is nil")
	}
	d := time.Duration(0)
	Positive(&d, time.Second)
	n := -1
	Positive(&n, 5)
	k := 3
	Positive(&k, 5)
	if d != time.Second || n != 5 || k != 3 {
		t.Fatalf("Positive: %v %d %d", d, n, k)
	}
}
