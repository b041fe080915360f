package metrics

import (
	"bufio"
	"bytes"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	vm "github.com/VictoriaMetrics/metrics"
)

// family is one mnemo_ series family: its type and help text, written
// before its first sample at each scrape.
type family struct{ typ, help string }

// families names every mnemo_ family and says what it counts.
var families = map[string]family{
	"mnemo_messages_received_total":         {"counter", "Messages from people that mnemo took to answer, by platform (slack, discord, console)."},
	"mnemo_replies_sent_total":              {"counter", "Replies posted, by platform; a reply split into several platform messages counts once."},
	"mnemo_llm_requests_total":              {"counter", "Chat-completion requests to the model server, by role (thinker answers people, reflector writes memory) and outcome (ok, error, canceled); retries count once per request."},
	"mnemo_llm_request_duration_seconds":    {"histogram", "Time from sending a chat-completion request to its answer or failure, retries included, by role."},
	"mnemo_llm_tokens_total":                {"counter", "Tokens the model server reported, by role and direction (in: prompt, out: completion)."},
	"mnemo_tool_calls_total":                {"counter", "Tool calls the model made, by tool and result (ok, error)."},
	"mnemo_reflections_total":               {"counter", "Reflection runs (turns turned into memory), by outcome (ok, failed, canceled)."},
	"mnemo_rollups_total":                   {"counter", "Roll-ups of old episode months, one model call each, by outcome (written, failed, conflict)."},
	"mnemo_memory_writes_total":             {"counter", "Changes to memory files through the store, by op (create, write, append, patch, delete) and outcome (ok, conflict, error)."},
	"mnemo_memory_conflicts_total":          {"counter", "Writes refused because the file changed since it was read (a hand edit or another write won)."},
	"mnemo_memory_hand_edits_total":         {"counter", "Changes to memory files made outside mnemo (an editor, a script) that the watcher saw."},
	"mnemo_tasks_in_flight":                 {"gauge", "Messages being answered now (the model and its tools at work), by platform."},
	"mnemo_journal_pending_turns":           {"gauge", "Turns journaled and not yet reflected into memory."},
	"mnemo_refused_total":                   {"counter", "Messages answered without the model, by platform and reason (access: the person is not let in; rate: too many messages a minute; tokens: the person's daily tokens are spent; total_tokens: everyone's daily tokens are spent; too_long: cut to the platform's limit, still answered)."},
	"mnemo_queue_depth":                     {"gauge", "Messages a platform's adapter accepted and has not answered yet (waiting for a slot or being answered)."},
	"mnemo_llm_time_to_first_token_seconds": {"histogram", "Time from sending a streamed chat-completion request to its first words, retries included, by role."},
	"mnemo_time_to_first_visible_seconds":   {"histogram", "Time from a message taken to the first words of its reply shown to the person (printed, posted or streamed), by platform."},
}

// firstBuckets are the upper bounds of the first-words histograms, in
// seconds: what mnemo adds is milliseconds, a model's first token a
// fraction of a second to many seconds.
var firstBuckets = []float64{0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60}

// latencyBuckets are the upper bounds of the LLM latency histogram, in
// seconds: a local model answers in a fraction of one, a long tool loop
// in minutes.
var latencyBuckets = []float64{0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60, 120}

// Metrics holds every mnemo_ series. The methods are safe for concurrent
// use; a nil *Metrics ignores every call, so hooks may be wired
// unconditionally.
type Metrics struct {
	set     *vm.Set
	pending atomic.Pointer[func() int]

	// names keeps each series name once made (name): a message records
	// eight or so samples, and making their names again each time (labels
	// sorted, values escaped, strings joined) was most of the metrics'
	// cost.
	namesMu sync.RWMutex
	names   map[seriesKey]string
}

// seriesKey is a series by its family and label pairs (at most
// maxCachedLabels of them: every series mnemo records).
type seriesKey struct {
	name string
	n    int
	kv   [2 * maxCachedLabels]string
}

const maxCachedLabels = 2

// Gauges reads the current levels at scrape time.
type Gauges struct {
	// JournalPending is the number of turns waiting in the reflection
	// journal.
	JournalPending func() int
}

// New makes every series; the Go runtime and process series are added at
// each scrape. The gauges' sources may also be set later, with SetGauges.
func New(g Gauges) *Metrics {
	m := &Metrics{set: vm.NewSet(), names: map[seriesKey]string{}}
	m.SetGauges(g)
	// Unlabelled series exist from the start, at 0, as a scraper expects.
	m.set.NewCounter("mnemo_memory_conflicts_total")
	m.set.NewCounter("mnemo_memory_hand_edits_total")
	m.set.NewGauge("mnemo_journal_pending_turns", func() float64 {
		if f := m.pending.Load(); f != nil {
			return float64((*f)())
		}
		return 0
	})
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

// Handler serves every series in the Prometheus text format, each mnemo_
// family with its HELP and TYPE, then the Go runtime and process series.
func (m *Metrics) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		var buf bytes.Buffer
		m.set.WritePrometheus(&buf)
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		bw := bufio.NewWriter(w)
		writeWithHelp(bw, buf.Bytes())
		vm.WriteProcessMetrics(bw)
		bw.Flush()
	})
}

// writeWithHelp copies samples (grouped by family, as a Set writes them)
// to w with the HELP and TYPE lines of each mnemo_ family before its first
// sample.
func writeWithHelp(w *bufio.Writer, samples []byte) {
	prev := ""
	for line := range bytes.Lines(samples) {
		fam := familyOf(string(line))
		if f, ok := families[fam]; ok && fam != prev {
			w.WriteString("# HELP " + fam + " " + f.help + "\n# TYPE " + fam + " " + f.typ + "\n")
			prev = fam
		}
		w.Write(line)
	}
}

// familyOf is the family a sample line belongs to: its name up to the
// labels or the value, less a histogram's _bucket, _sum or _count.
func familyOf(line string) string {
	name, _, _ := strings.Cut(line, " ")
	name, _, _ = strings.Cut(name, "{")
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok && families[base].typ == "histogram" {
			return base
		}
	}
	return name
}

// series is a series name with its labels sorted by key and each value
// escaped as the text format wants; kv alternates keys and values.
func series(name string, kv ...string) string {
	type label struct{ k, v string }
	var labels []label
	for i := 0; i < len(kv); i += 2 {
		labels = append(labels, label{kv[i], kv[i+1]})
	}
	slices.SortFunc(labels, func(a, b label) int { return strings.Compare(a.k, b.k) })
	var b strings.Builder
	b.WriteString(name)
	b.WriteByte('{')
	for i, l := range labels {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(l.k + `="` + labelEscaper.Replace(l.v) + `"`)
	}
	b.WriteByte('}')
	return b.String()
}

// labelEscaper escapes a label value for the text format.
var labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

// name is series(family, kv...), made once per series.
func (m *Metrics) name(family string, kv ...string) string {
	if len(kv) > 2*maxCachedLabels {
		return series(family, kv...)
	}
	k := seriesKey{name: family, n: len(kv)}
	copy(k.kv[:], kv)
	m.namesMu.RLock()
	s, ok := m.names[k]
	m.namesMu.RUnlock()
	if ok {
		return s
	}
	s = series(family, kv...)
	m.namesMu.Lock()
	m.names[k] = s
	m.namesMu.Unlock()
	return s
}

func (m *Metrics) inc(name string, kv ...string) {
	m.set.GetOrCreateCounter(m.name(name, kv...)).Inc()
}

// Refused counts a message answered without the model (see
// mnemo_refused_total for the reasons).
func (m *Metrics) Refused(platform, reason string) {
	if m == nil {
		return
	}
	m.inc("mnemo_refused_total", "platform", platform, "reason", reason)
}

// LLMRequest records one chat-completion request: its role ("thinker" or
// "reflector"), outcome ("ok", "error", "canceled"), duration, and the
// tokens the server reported (0 when it did not).
func (m *Metrics) LLMRequest(role, outcome string, d time.Duration, promptTokens, completionTokens int) {
	if m == nil {
		return
	}
	m.inc("mnemo_llm_requests_total", "role", role, "outcome", outcome)
	m.set.GetOrCreatePrometheusHistogramExt(m.name("mnemo_llm_request_duration_seconds", "role", role), latencyBuckets).Update(d.Seconds())
	if promptTokens > 0 {
		m.set.GetOrCreateCounter(m.name("mnemo_llm_tokens_total", "role", role, "direction", "in")).Add(promptTokens)
	}
	if completionTokens > 0 {
		m.set.GetOrCreateCounter(m.name("mnemo_llm_tokens_total", "role", role, "direction", "out")).Add(completionTokens)
	}
}

// FirstToken records how long a streamed request of role ("thinker",
// "reflector") took to its first words.
func (m *Metrics) FirstToken(role string, d time.Duration) {
	if m != nil {
		m.set.GetOrCreatePrometheusHistogramExt(m.name("mnemo_llm_time_to_first_token_seconds", "role", role), firstBuckets).Update(d.Seconds())
	}
}

// FirstVisible records how long a message on platform ("console",
// "slack", "discord") waited for the first words of its reply to show.
func (m *Metrics) FirstVisible(platform string, d time.Duration) {
	if m != nil {
		m.set.GetOrCreatePrometheusHistogramExt(m.name("mnemo_time_to_first_visible_seconds", "platform", platform), firstBuckets).Update(d.Seconds())
	}
}

// ToolCall counts one tool call by its tool name and result ("ok",
// "error").
func (m *Metrics) ToolCall(tool, result string) {
	if m != nil {
		m.inc("mnemo_tool_calls_total", "tool", tool, "result", result)
	}
}

// Reflection counts one reflection run by outcome ("ok", "failed",
// "canceled").
func (m *Metrics) Reflection(outcome string) {
	if m != nil {
		m.inc("mnemo_reflections_total", "outcome", outcome)
	}
}

// Rollup counts one roll-up's model call by outcome ("written",
// "failed", "conflict").
func (m *Metrics) Rollup(outcome string) {
	if m != nil {
		m.inc("mnemo_rollups_total", "outcome", outcome)
	}
}

// MemoryWrite counts one change to a memory file by op and outcome ("ok",
// "conflict", "error"); a conflict also counts in
// mnemo_memory_conflicts_total.
func (m *Metrics) MemoryWrite(op, outcome string) {
	if m == nil {
		return
	}
	m.inc("mnemo_memory_writes_total", "op", op, "outcome", outcome)
	if outcome == "conflict" {
		m.set.GetOrCreateCounter("mnemo_memory_conflicts_total").Inc()
	}
}

// HandEdit counts a change the watcher saw that mnemo did not make.
func (m *Metrics) HandEdit() {
	if m != nil {
		m.set.GetOrCreateCounter("mnemo_memory_hand_edits_total").Inc()
	}
}

// inFlight is the in-flight gauge of a platform.
func (m *Metrics) inFlight(platform string) *vm.Gauge {
	return m.set.GetOrCreateGauge(m.name("mnemo_tasks_in_flight", "platform", platform), nil)
}

// TaskStarted counts a message taken to be answered (received) and now
// being answered (in flight); TaskDone ends it, a reply sent when sent.
func (m *Metrics) TaskStarted(platform string) {
	if m != nil {
		m.inc("mnemo_messages_received_total", "platform", platform)
		m.inFlight(platform).Inc()
	}
}

// TaskDone ends a task TaskStarted began; sent says a reply went out.
func (m *Metrics) TaskDone(platform string, sent bool) {
	if m == nil {
		return
	}
	m.inFlight(platform).Dec()
	if sent {
		m.inc("mnemo_replies_sent_total", "platform", platform)
	}
}

// QueueSource exports mnemo_queue_depth for a platform, read from depth
// at each scrape: the messages it accepted and has not answered yet
// (waiting for a slot or being answered). Call it once per platform.
func (m *Metrics) QueueSource(platform string, depth func() int) {
	if m == nil {
		return
	}
	m.set.NewGauge(m.name("mnemo_queue_depth", "platform", platform), func() float64 { return float64(depth()) })
}
