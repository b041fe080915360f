package metrics

import (
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics holds every mnemo_ series. The methods are safe for concurrent
// use; a nil *Metrics ignores every call, so hooks may be wired
// unconditionally.
type Metrics struct {
	reg *prometheus.Registry

	received     *prometheus.CounterVec
	sent         *prometheus.CounterVec
	llmRequests  *prometheus.CounterVec
	llmLatency   *prometheus.HistogramVec
	tokens       *prometheus.CounterVec
	toolCalls    *prometheus.CounterVec
	reflections  *prometheus.CounterVec
	writes       *prometheus.CounterVec
	conflicts    prometheus.Counter
	handEdits    prometheus.Counter
	inFlight     *prometheus.GaugeVec
	pendingTurns prometheus.GaugeFunc
	pending      atomic.Pointer[func() int]
}

// Gauges reads the current levels at scrape time.
type Gauges struct {
	// JournalPending is the number of turns waiting in the reflection
	// journal.
	JournalPending func() int
}

// New registers every series, the Go runtime and the process collectors.
// The gauges' sources may also be set later, with SetGauges.
func New(g Gauges) *Metrics {
	reg := prometheus.NewRegistry()
	m := &Metrics{
		reg: reg,
		received: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mnemo_messages_received_total",
			Help: "Messages from people that mnemo took to answer, by platform (slack, discord, console).",
		}, []string{"platform"}),
		sent: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mnemo_replies_sent_total",
			Help: "Replies posted, by platform; a reply split into several platform messages counts once.",
		}, []string{"platform"}),
		llmRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mnemo_llm_requests_total",
			Help: "Chat-completion requests to the model server, by role (thinker answers people, reflector writes memory) and outcome (ok, error, canceled); retries count once per request.",
		}, []string{"role", "outcome"}),
		llmLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "mnemo_llm_request_duration_seconds",
			Help:    "Time from sending a chat-completion request to its answer or failure, retries included, by role.",
			Buckets: []float64{0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60, 120},
		}, []string{"role"}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mnemo_llm_tokens_total",
			Help: "Tokens the model server reported, by role and direction (in: prompt, out: completion).",
		}, []string{"role", "direction"}),
		toolCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mnemo_tool_calls_total",
			Help: "Tool calls the model made, by tool and result (ok, error).",
		}, []string{"tool", "result"}),
		reflections: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mnemo_reflections_total",
			Help: "Reflection runs (turns turned into memory), by outcome (ok, failed, canceled).",
		}, []string{"outcome"}),
		writes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mnemo_memory_writes_total",
			Help: "Changes to memory files through the store, by op (create, write, append, patch, delete) and outcome (ok, conflict, error).",
		}, []string{"op", "outcome"}),
		conflicts: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "mnemo_memory_conflicts_total",
			Help: "Writes refused because the file changed since it was read (a hand edit or another write won).",
		}),
		handEdits: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "mnemo_memory_hand_edits_total",
			Help: "Changes to memory files made outside mnemo (an editor, a script) that the watcher saw.",
		}),
		inFlight: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "mnemo_tasks_in_flight",
			Help: "Messages being answered now (the model and its tools at work), by platform.",
		}, []string{"platform"}),
	}
	m.SetGauges(g)
	m.pendingTurns = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "mnemo_journal_pending_turns",
		Help: "Turns journaled and not yet reflected into memory.",
	}, func() float64 {
		if f := m.pending.Load(); f != nil {
			return float64((*f)())
		}
		return 0
	})
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.received, m.sent, m.llmRequests, m.llmLatency, m.tokens, m.toolCalls,
		m.reflections, m.writes, m.conflicts, m.handEdits, m.inFlight, m.pendingTurns,
	)
	return m
}

// SetGauges sets where the gauges read their levels (a nil source reads 0):
// the reflector opens after the store whose changes are counted here.
func (m *Metrics) SetGauges(g Gauges) {
	if g.JournalPending == nil {
		m.pending.Store(nil)
		return
	}
	m.pending.Store(&g.JournalPending)
}

// Handler serves the registry in the Prometheus text format (and
// OpenMetrics when asked); a failing collector is reported in the answer,
// not by a 500, so the rest stays visible.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// Registry is the registry, for tests and for adding collectors.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// LLMRequest records one chat-completion request: its role ("thinker" or
// "reflector"), outcome ("ok", "error", "canceled"), duration, and the
// tokens the server reported (0 when it did not).
func (m *Metrics) LLMRequest(role, outcome string, d time.Duration, promptTokens, completionTokens int) {
	if m == nil {
		return
	}
	m.llmRequests.WithLabelValues(role, outcome).Inc()
	m.llmLatency.WithLabelValues(role).Observe(d.Seconds())
	if promptTokens > 0 {
		m.tokens.WithLabelValues(role, "in").Add(float64(promptTokens))
	}
	if completionTokens > 0 {
		m.tokens.WithLabelValues(role, "out").Add(float64(completionTokens))
	}
}

// ToolCall counts one tool call by its tool name and result ("ok",
// "error").
func (m *Metrics) ToolCall(tool, result string) {
	if m != nil {
		m.toolCalls.WithLabelValues(tool, result).Inc()
	}
}

// Reflection counts one reflection run by outcome ("ok", "failed",
// "canceled").
func (m *Metrics) Reflection(outcome string) {
	if m != nil {
		m.reflections.WithLabelValues(outcome).Inc()
	}
}

// MemoryWrite counts one change to a memory file by op and outcome ("ok",
// "conflict", "error"); a conflict also counts in
// mnemo_memory_conflicts_total.
func (m *Metrics) MemoryWrite(op, outcome string) {
	if m == nil {
		return
	}
	m.writes.WithLabelValues(op, outcome).Inc()
	if outcome == "conflict" {
		m.conflicts.Inc()
	}
}

// HandEdit counts a change the watcher saw that mnemo did not make.
func (m *Metrics) HandEdit() {
	if m != nil {
		m.handEdits.Inc()
	}
}

// TaskStarted counts a message taken to be answered (received) and now
// being answered (in flight); TaskDone ends it, a reply sent when sent.
func (m *Metrics) TaskStarted(platform string) {
	if m != nil {
		m.received.WithLabelValues(platform).Inc()
		m.inFlight.WithLabelValues(platform).Inc()
	}
}

// TaskDone ends a task TaskStarted began; sent says a reply went out.
func (m *Metrics) TaskDone(platform string, sent bool) {
	if m == nil {
		return
	}
	m.inFlight.WithLabelValues(platform).Dec()
	if sent {
		m.sent.WithLabelValues(platform).Inc()
	}
}

// QueueSource exports mnemo_queue_depth for a platform, read from depth
// at each scrape: the messages it accepted and has not answered yet
// (waiting for a slot or being answered). Call it once per platform.
func (m *Metrics) QueueSource(platform string, depth func() int) {
	if m == nil {
		return
	}
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name:        "mnemo_queue_depth",
		Help:        "Messages a platform's adapter accepted and has not answered yet (waiting for a slot or being answered).",
		ConstLabels: prometheus.Labels{"platform": platform},
	}, func() float64 { return float64(depth()) }))
}
