package slacktest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/mnemo-agent/mnemo/bots/internal/faketest"
)

// ErrNoConnection is returned when an operation needs an open Socket Mode
// connection and there is none.
var ErrNoConnection = errors.New("slacktest: no open Socket Mode connection")

// Envelope is one Socket Mode message carrying a request (events_api,
// slash_commands, interactive).
type Envelope struct {
	Seq                    int // set once written (in Sent()); 0 while queued
	ID                     string
	Type                   string
	AcceptsResponsePayload bool
	RetryAttempt           int
	RetryReason            string
	Payload                json.RawMessage

	EventID     string // events_api: payload.event_id
	TS          string // the inner event's ts, when it has one
	ResponseURL string // slash_commands: payload.response_url

	Conn   int       // connection it was written on (Sent() only)
	SentAt time.Time // Sent() only
}

// wireEnvelope is the JSON Slack sends; retry fields only for events_api.
type wireEnvelope struct {
	EnvelopeID             string          `json:"envelope_id"`
	Payload                json.RawMessage `json:"payload"`
	Type                   string          `json:"type"`
	AcceptsResponsePayload bool            `json:"accepts_response_payload"`
	RetryAttempt           *int            `json:"retry_attempt,omitempty"`
	RetryReason            *string         `json:"retry_reason,omitempty"`
}

func (e Envelope) frame() []byte {
	w := wireEnvelope{EnvelopeID: e.ID, Payload: e.Payload, Type: e.Type,
		AcceptsResponsePayload: e.AcceptsResponsePayload}
	if e.Type == "events_api" {
		w.RetryAttempt, w.RetryReason = &e.RetryAttempt, &e.RetryReason
	}
	b, _ := json.Marshal(w)
	return b
}

func (e Envelope) clone() Envelope {
	e.Payload = bytes.Clone(e.Payload)
	return e
}

// Ack is one message the client sent on a Socket Mode connection, normally
// {"envelope_id":"…","payload":{…}}.
type Ack struct {
	Seq        int
	EnvelopeID string
	Payload    json.RawMessage // nil when the ack carried none
	Raw        []byte
	Conn       int
	Time       time.Time
	Latency    time.Duration // since the acked envelope was written; 0 if unknown
}

// Conn describes one Socket Mode connection.
type Conn struct {
	ID       int // 1, 2, … in order of opening
	Ticket   string
	OpenedAt time.Time
	ClosedAt time.Time // zero while open
}

type debugInfo struct {
	Host                      string `json:"host"`
	BuildNumber               int    `json:"build_number,omitempty"`
	ApproximateConnectionTime int    `json:"approximate_connection_time,omitempty"`
}

type helloMsg struct {
	Type           string    `json:"type"`
	NumConnections int       `json:"num_connections"`
	DebugInfo      debugInfo `json:"debug_info"`
	ConnectionInfo struct {
		AppID string `json:"app_id"`
	} `json:"connection_info"`
}

type disconnectMsg struct {
	Type      string    `json:"type"`
	Reason    string    `json:"reason"`
	DebugInfo debugInfo `json:"debug_info"`
}

type wsConn struct {
	info   Conn
	ws     *websocket.Conn
	wmu    sync.Mutex // serialises data-frame writes
	ready  bool       // hello written
	open   bool
	active bool // envelopes go to this connection
	done   chan struct{}
}

func (c *wsConn) host() string { return fmt.Sprintf("applink-slacktest-%d", c.info.ID) }

func (c *wsConn) write(frame []byte) error {
	_ = c.ws.SetWriteDeadline(time.Now().Add(5 * time.Second))
	return c.ws.WriteMessage(websocket.TextMessage, frame)
}

type redeliveryTimer struct{ t *time.Timer }

func (s *Server) serveLink(w http.ResponseWriter, r *http.Request) {
	ticket := r.URL.Query().Get("ticket")
	s.mu.Lock()
	used, issued := s.tickets[ticket]
	if s.closed || !issued || used {
		s.rejectedDials++
		s.changes.NotifyLocked()
		s.mu.Unlock()
		http.Error(w, "invalid or used ticket", http.StatusUnauthorized)
		return
	}
	s.tickets[ticket] = true
	s.mu.Unlock()

	ws := faketest.Upgrade(w, r, &s.upgrader, &s.mu, &s.closed)
	if ws == nil {
		return
	}
	c := &wsConn{info: Conn{ID: len(s.conns) + 1, Ticket: ticket, OpenedAt: time.Now()}, ws: ws,
		open: true, active: true, done: make(chan struct{})}
	for _, o := range s.conns {
		o.active = false // Slack delivers on the newest connection
	}
	s.conns = append(s.conns, c)
	hello := helloMsg{Type: "hello", NumConnections: s.openCountLocked(),
		DebugInfo: debugInfo{Host: c.host(), BuildNumber: 1, ApproximateConnectionTime: 18060}}
	hello.ConnectionInfo.AppID = s.opts.AppID
	helloFrame, _ := json.Marshal(hello)
	queued := s.pending
	s.pending = nil
	for i := range queued {
		queued[i] = s.recordSentLocked(c, queued[i])
	}
	s.wg.Add(2) // reader (this goroutine) and pinger
	ws.SetPongHandler(func(string) error {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.pongs++
		s.changes.NotifyLocked()
		return nil
	})
	c.wmu.Lock()
	s.mu.Unlock()

	err := c.write(helloFrame)
	var failed []Envelope
	for i, env := range queued {
		if err == nil {
			err = c.write(env.frame())
		}
		if err != nil {
			failed = queued[i:]
			queued = queued[:i]
			break
		}
	}
	c.wmu.Unlock()

	s.mu.Lock()
	c.ready = true
	s.requeueLocked(failed)
	for _, env := range queued {
		s.scheduleRedeliveryLocked(env)
	}
	s.changes.NotifyLocked()
	s.mu.Unlock()

	go s.pinger(c)
	s.reader(c)
}

func (s *Server) openCountLocked() int { return s.countLocked(func(c *wsConn) bool { return c.open }) }

// countLocked is the number of connections for which is holds true.
func (s *Server) countLocked(is func(*wsConn) bool) int {
	n := 0
	for _, c := range s.conns {
		if is(c) {
			n++
		}
	}
	return n
}

func (s *Server) pinger(c *wsConn) {
	defer s.wg.Done()
	if s.opts.PingInterval < 0 {
		return
	}
	t := time.NewTicker(s.opts.PingInterval)
	defer t.Stop()
	for {
		select {
		case <-c.done:
			return
		case <-t.C:
			_ = c.ws.WriteControl(websocket.PingMessage, []byte("ping"), time.Now().Add(time.Second))
		}
	}
}

func (s *Server) reader(c *wsConn) {
	defer s.wg.Done()
	for {
		_, data, err := c.ws.ReadMessage()
		if err != nil {
			break
		}
		s.recordAck(c, data)
	}
	_ = c.ws.Close()
	s.mu.Lock()
	c.open, c.active = false, false
	c.info.ClosedAt = time.Now()
	s.changes.NotifyLocked()
	s.mu.Unlock()
	close(c.done)
}

func (s *Server) recordAck(c *wsConn, data []byte) {
	var msg struct {
		EnvelopeID string          `json:"envelope_id"`
		Payload    json.RawMessage `json:"payload"`
	}
	_ = json.Unmarshal(data, &msg)
	ack := Ack{EnvelopeID: msg.EnvelopeID, Payload: msg.Payload, Raw: data, Conn: c.info.ID, Time: time.Now()}
	s.mu.Lock()
	defer s.mu.Unlock()
	if info, ok := s.sentAt[ack.EnvelopeID]; ok {
		ack.Latency = ack.Time.Sub(info.at)
	}
	ack.Seq = s.nextSeqLocked()
	s.acks = append(s.acks, ack)
	s.changes.NotifyLocked()
}

// activeLocked is the connection envelopes go to, or nil.
func (s *Server) activeLocked() *wsConn {
	for i := len(s.conns) - 1; i >= 0; i-- {
		if c := s.conns[i]; c.active {
			return c
		}
	}
	return nil
}

func (s *Server) recordSentLocked(c *wsConn, env Envelope) Envelope {
	env.Seq = s.nextSeqLocked()
	env.Conn = c.info.ID
	env.SentAt = time.Now()
	s.sent = append(s.sent, env.clone())
	s.sentAt[env.ID] = sentInfo{at: env.SentAt, env: env}
	return env
}

// requeueLocked puts envelopes whose write failed back in front of the queue.
func (s *Server) requeueLocked(envs []Envelope) {
	if len(envs) == 0 {
		return
	}
	drop := map[string]bool{}
	for _, e := range envs {
		drop[e.ID] = true
		delete(s.sentAt, e.ID)
	}
	kept := s.sent[:0]
	for _, e := range s.sent {
		if !drop[e.ID] {
			kept = append(kept, e)
		}
	}
	s.sent = kept
	var again []Envelope
	for _, e := range envs {
		e.Seq, e.Conn, e.SentAt = 0, 0, time.Time{}
		again = append(again, e)
	}
	s.pending = append(again, s.pending...)
}

// deliver writes env on the active connection, or queues it until the next
// connection says hello. It returns env as recorded.
func (s *Server) deliver(env Envelope) Envelope {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return env
	}
	c := s.activeLocked()
	if c == nil {
		s.pending = append(s.pending, env.clone())
		s.changes.NotifyLocked()
		s.mu.Unlock()
		return env
	}
	env = s.recordSentLocked(c, env)
	c.wmu.Lock()
	s.mu.Unlock()
	err := c.write(env.frame())
	c.wmu.Unlock()

	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		c.active = false // a broken connection gets nothing more
		s.requeueLocked([]Envelope{env})
		env.Seq, env.Conn, env.SentAt = 0, 0, time.Time{}
	} else {
		s.scheduleRedeliveryLocked(env)
	}
	s.changes.NotifyLocked()
	return env
}

func (s *Server) scheduleRedeliveryLocked(env Envelope) {
	d := s.redeliverAfter
	if s.closed || d <= 0 || env.Type != "events_api" || env.RetryAttempt >= s.opts.MaxRedeliveries {
		return
	}
	rt := &redeliveryTimer{}
	s.wg.Add(1)
	rt.t = time.AfterFunc(d, func() {
		defer s.wg.Done()
		s.autoRedeliver(rt, env)
	})
	s.timers[rt] = struct{}{}
}

func (s *Server) autoRedeliver(rt *redeliveryTimer, env Envelope) {
	s.mu.Lock()
	delete(s.timers, rt)
	acked := s.eventAckedLocked(env.EventID)
	closed := s.closed
	s.mu.Unlock()
	if closed || acked {
		return
	}
	s.Redeliver(env, env.RetryAttempt+1)
}

// eventAckedLocked: has any delivery of this event been acked?
func (s *Server) eventAckedLocked(eventID string) bool {
	for _, a := range s.acks {
		if info, ok := s.sentAt[a.EnvelopeID]; ok && info.env.EventID == eventID {
			return true
		}
	}
	return false
}

// SetRedeliverAfter turns automatic redelivery of unacked events_api
// envelopes on (d > 0) or off (0) for envelopes written from now on.
func (s *Server) SetRedeliverAfter(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.redeliverAfter = d
}

// Push sends an arbitrary envelope (e.g. Type "interactive"); an empty ID
// gets a fresh one. It is queued while no connection is open.
func (s *Server) Push(env Envelope) Envelope {
	if env.ID == "" {
		env.ID = randomUUID()
	}
	env.Payload = bytes.Clone(env.Payload)
	return s.deliver(env)
}

// Redeliver sends env again as Slack does when an ack is late: same payload
// (so the same event_id), a new envelope id, retry_attempt = attempt and
// retry_reason "timeout" (empty for attempt 0).
func (s *Server) Redeliver(env Envelope, attempt int) Envelope {
	env.ID = randomUUID()
	env.RetryAttempt = attempt
	env.RetryReason = ""
	if attempt > 0 {
		env.RetryReason = "timeout"
	}
	env.Seq, env.Conn, env.SentAt = 0, 0, time.Time{}
	env.Payload = bytes.Clone(env.Payload)
	return s.deliver(env)
}

// SendRaw writes data as one text frame on the active connection, to test
// how a client copes with frames Slack would not send.
func (s *Server) SendRaw(data []byte) error {
	s.mu.Lock()
	c := s.activeLocked()
	if c == nil {
		s.mu.Unlock()
		return ErrNoConnection
	}
	c.wmu.Lock()
	s.mu.Unlock()
	defer c.wmu.Unlock()
	return c.write(data)
}

// Disconnect sends {"type":"disconnect","reason":reason,"debug_info":{…}}
// on the active connection (e.g. reason "refresh_requested", "warning",
// "link_disabled"), stops delivering on it, and closes it once the client
// has closed it or after Options.DisconnectGrace.
func (s *Server) Disconnect(reason string) error {
	s.mu.Lock()
	c := s.activeLocked()
	if c == nil || s.closed {
		s.mu.Unlock()
		return ErrNoConnection
	}
	c.active = false
	frame, _ := json.Marshal(disconnectMsg{Type: "disconnect", Reason: reason, DebugInfo: debugInfo{Host: c.host()}})
	s.wg.Add(1)
	c.wmu.Lock()
	s.mu.Unlock()
	err := c.write(frame)
	c.wmu.Unlock()

	go func() {
		defer s.wg.Done()
		t := time.NewTimer(s.opts.DisconnectGrace)
		defer t.Stop()
		select {
		case <-c.done:
		case <-t.C:
			_ = c.ws.Close()
		}
	}()
	return err
}

// DropConnection closes the active connection's socket without a close frame
// or a disconnect message, as a network failure would.
func (s *Server) DropConnection() error {
	s.mu.Lock()
	c := s.activeLocked()
	if c != nil {
		c.active = false
	}
	s.mu.Unlock()
	if c == nil {
		return ErrNoConnection
	}
	return c.ws.Close()
}

// Connections is the number of Socket Mode connections opened so far (hello
// written).
func (s *Server) Connections() int {
	return faketest.Locked(&s.mu, func() int { return s.readyCountLocked() })
}

func (s *Server) readyCountLocked() int {
	return s.countLocked(func(c *wsConn) bool { return c.ready })
}

// OpenConnections is the number of Socket Mode connections open now.
func (s *Server) OpenConnections() int {
	return faketest.Locked(&s.mu, func() int { return s.openCountLocked() })
}

// Conns describes every connection opened so far, in order.
func (s *Server) Conns() []Conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Conn, len(s.conns))
	for i, c := range s.conns {
		out[i] = c.info
	}
	return out
}

// RejectedDials counts WebSocket dials refused for an unknown or reused ticket.
func (s *Server) RejectedDials() int {
	return faketest.Locked(&s.mu, func() int { return s.rejectedDials })
}

// WaitConnected waits until at least n connections have been opened in all
// (counting closed ones), each having received its hello.
func (s *Server) WaitConnected(n int, timeout time.Duration) error {
	return faketest.WaitCount(&s.changes, &s.mu, ErrTimeout, n, timeout, "connections", s.readyCountLocked)
}

// WaitOpen waits until exactly n connections are open.
func (s *Server) WaitOpen(n int, timeout time.Duration) error {
	var got int
	if !s.waitFor(timeout, func() bool { got = s.openCountLocked(); return got == n }) {
		return fmt.Errorf("%w waiting for %d open connections (got %d)", ErrTimeout, n, got)
	}
	return nil
}

// Sent returns the envelopes written so far, in order.
func (s *Server) Sent() []Envelope { return faketest.Copy(&s.mu, &s.sent, Envelope.clone) }

// Pending is the number of envelopes waiting for a connection.
func (s *Server) Pending() int { return faketest.Locked(&s.mu, func() int { return len(s.pending) }) }

// Acks returns everything the clients sent on Socket Mode connections.
func (s *Server) Acks() []Ack { return faketest.Locked(&s.mu, s.acksLocked) }

func (s *Server) acksLocked() []Ack {
	return faketest.Select(s.acks, func(Ack) bool { return true }, Ack.clone)
}

func (a Ack) clone() Ack {
	a.Payload, a.Raw = bytes.Clone(a.Payload), bytes.Clone(a.Raw)
	return a
}

// WaitAck waits for the first ack of envelopeID.
func (s *Server) WaitAck(envelopeID string, timeout time.Duration) (Ack, error) {
	var found Ack
	ok := s.waitFor(timeout, func() bool {
		for _, a := range s.acks {
			if a.EnvelopeID == envelopeID {
				found = a
				found.Payload, found.Raw = bytes.Clone(a.Payload), bytes.Clone(a.Raw)
				return true
			}
		}
		return false
	})
	if !ok {
		return Ack{}, fmt.Errorf("%w waiting for the ack of %s", ErrTimeout, envelopeID)
	}
	return found, nil
}

// WaitSent waits until at least n envelopes have been written and returns them.
func (s *Server) WaitSent(n int, timeout time.Duration) ([]Envelope, error) {
	return waitRecords(s, n, timeout, "sent envelopes", func() int { return len(s.sent) }, s.Sent)
}
