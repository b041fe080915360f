package discordtest

import (
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/gorilla/websocket"

	"github.com/mnemo-agent/mnemo/bots/internal/faketest"
)

// Gateway opcodes.
const (
	opDispatch            = 0
	opHeartbeat           = 1
	opIdentify            = 2
	opPresenceUpdate      = 3
	opVoiceStateUpdate    = 4
	opResume              = 6
	opReconnect           = 7
	opRequestGuildMembers = 8
	opInvalidSession      = 9
	opHello               = 10
	opHeartbeatACK        = 11
)

// Gateway close codes the server sends.
const (
	CloseUnknownError         = 4000
	CloseUnknownOpcode        = 4001
	CloseDecodeError          = 4002
	CloseNotAuthenticated     = 4003
	CloseAuthenticationFailed = 4004
	CloseAlreadyAuthenticated = 4005
	CloseInvalidSeq           = 4007
	CloseRateLimited          = 4008
	CloseSessionTimedOut      = 4009
	CloseInvalidShard         = 4010
	CloseShardingRequired     = 4011
	CloseInvalidAPIVersion    = 4012
	CloseInvalidIntents       = 4013
	CloseDisallowedIntents    = 4014
)

// nonResumable lists the close codes after which Discord does not let the
// session be resumed.
var nonResumable = map[int]bool{
	CloseAuthenticationFailed: true, CloseInvalidSeq: true, CloseSessionTimedOut: true,
	CloseInvalidShard: true, CloseShardingRequired: true, CloseInvalidAPIVersion: true,
	CloseInvalidIntents: true, CloseDisallowedIntents: true,
}

type connState int

const (
	stateHello       connState = iota // HELLO sent, waiting for IDENTIFY or RESUME
	stateReady                        // READY or RESUMED sent: dispatches flow
	stateReconnected                  // op 7 sent: waiting for the client to leave
	stateClosing                      // close frame or drop queued
	stateClosed                       // reader ended
)

type frameKind int

const (
	frameData  frameKind = iota
	frameClose           // a close frame, then wait CloseGrace for the client
	frameDrop            // close TCP without a close frame
)

// outFrame is one thing the writer goroutine puts on a connection.
type outFrame struct {
	kind   frameKind
	data   []byte
	code   int
	reason string

	// bookkeeping once written
	event         *Event // a dispatch: recorded in Events
	ready         bool   // READY or RESUMED
	interactionID string // INTERACTION_CREATE: starts the interaction's window
}

// conn is one gateway WebSocket connection.
type conn struct {
	id      int
	ws      *websocket.Conn
	state   connState
	session *session
	queue   []outFrame // guarded by Server.mu
	stop    bool       // writer: exit once the queue is empty
	wake    chan struct{}

	serverCode int  // close code the server sent, 0 if none
	dropped    bool // DropConnections
}

// enqueue hands f to the writer; s.mu must be held.
func (c *conn) enqueue(f outFrame) {
	if c.stop {
		return
	}
	c.queue = append(c.queue, f)
	c.poke()
}

func (c *conn) poke() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// stopLocked makes the writer exit and detaches the session.
func (c *conn) stopLocked() {
	c.stop = true
	c.state = stateClosed
	c.detachLocked()
	c.poke()
}

func (c *conn) detachLocked() {
	if c.session != nil && c.session.conn == c {
		c.session.conn = nil
	}
	c.session = nil
}

// gatewayFrame is a gateway payload; s and t are null except for dispatches.
type gatewayFrame struct {
	Op int             `json:"op"`
	D  json.RawMessage `json:"d"`
	S  *int            `json:"s"`
	T  *string         `json:"t"`
}

func opFrame(op int, d any) []byte {
	return mustJSON(gatewayFrame{Op: op, D: mustJSON(d)})
}

func dispatchFrame(typ string, seq int, d json.RawMessage) []byte {
	return mustJSON(gatewayFrame{Op: opDispatch, D: d, S: &seq, T: &typ})
}

var trace = []string{`["discordtest",{"micros":0}]`}

func (s *Server) serveGateway(w http.ResponseWriter, r *http.Request) {
	ws := faketest.Upgrade(w, r, &s.upgrader, &s.mu, &s.closed)
	if ws == nil {
		return
	}
	c := &conn{id: len(s.conns) + 1, ws: ws, wake: make(chan struct{}, 1)}
	s.conns = append(s.conns, c)
	ms := max(s.opts.HeartbeatInterval.Milliseconds(), 1)
	c.enqueue(outFrame{data: opFrame(opHello, map[string]any{"heartbeat_interval": ms, "_trace": trace})})
	q := r.URL.Query()
	switch {
	case q.Get("v") != "" && q.Get("v") != "9":
		s.closeConnLocked(c, CloseInvalidAPIVersion, "Invalid API version.")
	case q.Get("encoding") != "" && q.Get("encoding") != "json":
		s.closeConnLocked(c, CloseDecodeError, "Error while decoding payload.")
	}
	s.wg.Add(2)
	s.changes.NotifyLocked()
	s.mu.Unlock()

	go s.writeLoop(c)
	s.readLoop(c)
}

// readLoop runs on the handler goroutine until the connection ends.
func (s *Server) readLoop(c *conn) {
	defer s.wg.Done()
	var ce *websocket.CloseError
	for {
		_, msg, err := c.ws.ReadMessage()
		if err != nil {
			errors.As(err, &ce)
			break
		}
		s.mu.Lock()
		s.handlePayload(c, msg)
		s.mu.Unlock()
	}

	s.mu.Lock()
	d := Disconnect{Seq: s.nextSeqLocked(), Conn: c.id, ServerCode: c.serverCode, Dropped: c.dropped,
		At: s.now()}
	if ce != nil {
		d.Code, d.Reason = ce.Code, ce.Text
		// A client that closes with 1000 or 1001 ends its session (Discord
		// documents this); other codes, or no close frame, keep it resumable.
		// A close frame answering the server's own does not count.
		if sess := c.session; sess != nil && c.state != stateClosing &&
			(ce.Code == websocket.CloseNormalClosure || ce.Code == websocket.CloseGoingAway) {
			sess.live = false
		}
	}
	s.disconnects = append(s.disconnects, d)
	c.stopLocked()
	s.changes.NotifyLocked()
	s.mu.Unlock()
	_ = c.ws.Close()
}

// writeLoop writes queued frames in order; it owns all data writes on c.ws.
func (s *Server) writeLoop(c *conn) {
	defer s.wg.Done()
	for {
		s.mu.Lock()
		frames, stop := c.queue, c.stop
		c.queue = nil
		s.mu.Unlock()
		if len(frames) == 0 {
			if stop {
				return
			}
			<-c.wake
			continue
		}
		for _, f := range frames {
			if !s.writeFrame(c, f) {
				s.mu.Lock()
				c.stop = true // drop whatever is queued; the reader ends the connection
				c.queue = nil
				s.mu.Unlock()
				break
			}
		}
	}
}

// writeFrame writes one frame; false once nothing more may be written.
func (s *Server) writeFrame(c *conn, f outFrame) bool {
	deadline := time.Now().Add(5 * time.Second)
	switch f.kind {
	case frameClose:
		_ = c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(f.code, f.reason), deadline)
		_ = c.ws.SetReadDeadline(time.Now().Add(s.opts.CloseGrace))
		return false
	case frameDrop:
		_ = c.ws.Close()
		return false
	}
	// The time is taken before writing so that a client that answers at once
	// never looks faster than it is.
	now := s.now()
	_ = c.ws.SetWriteDeadline(deadline)
	if err := c.ws.WriteMessage(websocket.TextMessage, f.data); err != nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if f.event != nil {
		e := *f.event
		e.Seq, e.At = s.nextSeqLocked(), now
		s.events = append(s.events, e)
	}
	if f.ready {
		s.readies++
	}
	if st := s.interactions[f.interactionID]; st != nil && st.writtenAt.IsZero() {
		st.writtenAt = now
	}
	s.changes.NotifyLocked()
	return true
}

// closeConnLocked queues a close frame and stops dispatching on c.
func (s *Server) closeConnLocked(c *conn, code int, reason string) {
	if c.state >= stateClosing {
		return
	}
	if sess := c.session; sess != nil && nonResumable[code] {
		sess.live = false
	}
	c.detachLocked()
	c.state = stateClosing
	c.serverCode = code
	c.enqueue(outFrame{kind: frameClose, code: code, reason: reason})
}

func (s *Server) dropConnLocked(c *conn) {
	if c.state >= stateClosing {
		return
	}
	c.detachLocked()
	c.state = stateClosing
	c.dropped = true
	c.enqueue(outFrame{kind: frameDrop})
}

// handlePayload handles one client frame; s.mu is held.
func (s *Server) handlePayload(c *conn, msg []byte) {
	if c.state >= stateReconnected {
		return // the client is leaving; Discord ignores it too
	}
	var p struct {
		Op *int            `json:"op"`
		D  json.RawMessage `json:"d"`
	}
	if err := json.Unmarshal(msg, &p); err != nil || p.Op == nil {
		s.closeConnLocked(c, CloseDecodeError, "Error while decoding payload.")
		return
	}
	switch *p.Op {
	case opHeartbeat:
		s.heartbeats++
		if !s.noACKs {
			c.enqueue(outFrame{data: opFrame(opHeartbeatACK, nil)})
		}
		s.changes.NotifyLocked()
	case opIdentify:
		if id, ok := readAuthLocked[identifyPayload](s, c, p.D); ok {
			s.identify(c, id)
		}
	case opResume:
		if res, ok := readAuthLocked[resumePayload](s, c, p.D); ok {
			s.resume(c, res)
		}
	case opPresenceUpdate, opVoiceStateUpdate, opRequestGuildMembers:
		if c.state != stateReady {
			s.closeConnLocked(c, CloseNotAuthenticated, "Not authenticated.")
		}
	default:
		s.closeConnLocked(c, CloseUnknownOpcode, "Unknown opcode.")
	}
}

func (s *Server) tokenOK(token string) bool {
	return token == "Bot "+s.opts.Token || token == s.opts.Token
}

type identifyPayload struct {
	Token   string  `json:"token"`
	Intents *int    `json:"intents"`
	Shard   *[2]int `json:"shard"`
}

// readAuthLocked decodes an IDENTIFY or RESUME payload, and closes c as
// Discord does when it does not decode or c is already authenticated.
func readAuthLocked[P any](s *Server, c *conn, d json.RawMessage) (P, bool) {
	var p P
	if err := json.Unmarshal(d, &p); err != nil {
		s.closeConnLocked(c, CloseDecodeError, "Error while decoding payload.")
		return p, false
	}
	if c.state == stateReady {
		s.closeConnLocked(c, CloseAlreadyAuthenticated, "Already authenticated.")
		return p, false
	}
	return p, true
}

// identify answers an IDENTIFY that readAuthLocked accepted.
func (s *Server) identify(c *conn, p identifyPayload) {
	rec := Identify{Seq: s.nextSeqLocked(), Token: p.Token, Conn: c.id}
	if p.Intents != nil {
		rec.Intents = *p.Intents
	}
	shard := [2]int{0, 1}
	if p.Shard != nil {
		shard = *p.Shard
		sh := *p.Shard
		rec.Shard = &sh
	}
	fail := func(code int, reason string) {
		rec.CloseCode = code
		s.closeConnLocked(c, code, reason)
	}
	switch {
	case len(s.identifyFaults) > 0:
		f := s.identifyFaults[0]
		s.identifyFaults = s.identifyFaults[1:]
		if f.invalid {
			rec.InvalidSession = true
			c.enqueue(outFrame{data: opFrame(opInvalidSession, false)})
		}
		fail(f.code, f.reason)
	case !s.tokenOK(p.Token):
		fail(CloseAuthenticationFailed, "Authentication failed.")
	case p.Intents == nil || *p.Intents < 0 || *p.Intents >= 1<<26:
		fail(CloseInvalidIntents, "Invalid intent(s).")
	case *p.Intents&intentMessageContent != 0 && !s.opts.contentAllowed():
		fail(CloseDisallowedIntents, "Disallowed intent(s).")
	case shard[1] < 1 || shard[0] < 0 || shard[0] >= shard[1]:
		fail(CloseInvalidShard, "Invalid shard.")
	default:
		sess := s.newSessionLocked(shard, *p.Intents)
		rec.SessionID = sess.id
		s.identifies = append(s.identifies, rec)
		s.bindLocked(c, sess)
		sess.seq = 1
		bot := s.botUser()
		ready := map[string]any{
			"v": 9, "user": bot, "guilds": []any{}, "private_channels": []any{},
			"session_id": sess.id, "session_type": "normal", "resume_gateway_url": s.gatewayURL,
			"shard": shard, "application": map[string]any{"id": s.opts.ApplicationID, "flags": 0},
			"_trace": trace,
		}
		data := mustJSON(ready)
		c.enqueue(outFrame{data: dispatchFrame("READY", 1, data), ready: true,
			event: &Event{Conn: c.id, SessionID: sess.id, S: 1, Type: "READY", Data: data}})
		s.flushPendingLocked(sess)
		s.changes.NotifyLocked()
		return
	}
	s.identifies = append(s.identifies, rec)
	s.changes.NotifyLocked()
}

type resumePayload struct {
	Token     string `json:"token"`
	SessionID string `json:"session_id"`
	Seq       int64  `json:"seq"`
}

// resume answers a RESUME that readAuthLocked accepted.
func (s *Server) resume(c *conn, p resumePayload) {
	rec := Resume{Seq: s.nextSeqLocked(), SessionID: p.SessionID, ClientSeq: p.Seq, Conn: c.id}
	defer func() {
		s.resumes = append(s.resumes, rec)
		s.changes.NotifyLocked()
	}()
	if !s.tokenOK(p.Token) {
		rec.CloseCode = CloseAuthenticationFailed
		s.closeConnLocked(c, CloseAuthenticationFailed, "Authentication failed.")
		return
	}
	sess := s.sessionLocked(p.SessionID)
	if sess == nil || !sess.live || p.Seq < int64(sess.evicted) || p.Seq > int64(sess.seq) {
		if sess != nil {
			sess.live = false
		}
		c.enqueue(outFrame{data: opFrame(opInvalidSession, false)})
		return
	}
	if old := sess.conn; old != nil && old != c {
		s.dropConnLocked(old)
	}
	rec.Accepted = true
	from := int(p.Seq) - s.replayOnResume
	s.replayOnResume = 0
	for _, be := range sess.buf {
		if be.s > from {
			c.enqueue(be.frame(c.id, sess.id, true))
			rec.Replayed++
		}
	}
	s.bindLocked(c, sess)
	sess.seq++
	resumed := mustJSON(map[string]any{"_trace": trace})
	c.enqueue(outFrame{data: dispatchFrame("RESUMED", sess.seq, resumed), ready: true,
		event: &Event{Conn: c.id, SessionID: sess.id, S: sess.seq, Type: "RESUMED", Data: resumed}})
}

func (s *Server) bindLocked(c *conn, sess *session) {
	c.session = sess
	c.state = stateReady
	sess.conn = c
}

func (s *Server) readyConnsLocked() []*conn {
	var out []*conn
	for _, c := range s.conns {
		if c.state == stateReady {
			out = append(out, c)
		}
	}
	return out
}

// Reconnect sends op 7 (Reconnect) on every READY connection. The server
// stops dispatching on them; events wait in their sessions for the RESUME.
// discordgo closes with 1012 and resumes on a new connection.
func (s *Server) Reconnect() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.readyConnsLocked() {
		c.enqueue(outFrame{data: opFrame(opReconnect, nil)})
		c.detachLocked()
		c.state = stateReconnected
	}
}

// InvalidSession sends op 9 with d=resumable on every READY connection. The
// connection goes back to waiting for IDENTIFY or RESUME (discordgo sends a
// new IDENTIFY on the same socket and gets READY for a new session). When
// resumable is false the sessions end: events for their shards are dropped
// until a new session is READY.
func (s *Server) InvalidSession(resumable bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.readyConnsLocked() {
		c.enqueue(outFrame{data: opFrame(opInvalidSession, resumable)})
		if !resumable {
			c.session.live = false
		}
		c.detachLocked()
		c.state = stateHello
	}
}

// DropConnections closes every connection's TCP socket without a close
// frame (after what is already queued on it). Sessions stay resumable.
func (s *Server) DropConnections() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.conns {
		s.dropConnLocked(c)
	}
}

// CloseConnections sends a close frame with code and reason on every open
// connection, then closes it once the client has (or after CloseGrace).
// Sessions stay resumable unless code is one Discord documents as not
// resumable (4004, 4007, 4009, 4010–4014).
func (s *Server) CloseConnections(code int, reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.conns {
		s.closeConnLocked(c, code, reason)
	}
}

// SetHeartbeatACKs turns heartbeat ACKs (op 11) on (the default) or off. With
// them off discordgo reconnects by itself after five intervals; it closes
// with 1000 first, which ends the session, so it comes back with IDENTIFY.
func (s *Server) SetHeartbeatACKs(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.noACKs = !on
}

// SetHeartbeatInterval changes the interval HELLO gives the connections
// that open from now on (whole milliseconds, at least 1); open connections
// keep theirs. It returns how many connections were accepted before the
// change, so that a test can tell the connections that have the new one
// (a READY event's Conn above it).
func (s *Server) SetHeartbeatInterval(d time.Duration) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.opts.HeartbeatInterval = d
	return len(s.conns)
}

// RequestHeartbeat sends op 1 on every READY connection; clients must answer
// with a heartbeat at once.
func (s *Server) RequestHeartbeat() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.readyConnsLocked() {
		c.enqueue(outFrame{data: opFrame(opHeartbeat, nil)})
	}
}

type closeFault struct {
	code    int
	reason  string
	invalid bool // op 9 d=false before the close frame
}

// FailNextIdentify answers the next IDENTIFY with a close frame carrying code
// and reason (e.g. 4004 "Authentication failed."). Calls queue up.
func (s *Server) FailNextIdentify(code int, reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.identifyFaults = append(s.identifyFaults, closeFault{code: code, reason: reason})
}

// InvalidNextIdentify answers the next IDENTIFY with op 9 (INVALID_SESSION,
// d=false) and then a close frame carrying code and reason: a session refused
// without READY. discordgo's Open returns nil for it (it only logs that the
// first packet was not READY), re-IDENTIFYs on the socket (ignored: it is
// closing), and then sees the close. Calls queue up with FailNextIdentify's.
func (s *Server) InvalidNextIdentify(code int, reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.identifyFaults = append(s.identifyFaults, closeFault{code: code, reason: reason, invalid: true})
}

// ReplayOnResume makes the next accepted RESUME also replay the last n events
// the client had already acknowledged (by its seq), as Discord may: clients
// must dedupe.
func (s *Server) ReplayOnResume(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.replayOnResume = n
}
