package metrics

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// scrape GETs /metrics from h and parses the text format.
func scrape(t *testing.T, h http.Handler) map[string]*dto.MetricFamily {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("/metrics = %d %s", rec.Code, rec.Body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(rec.Body.String()))
	if err != nil {
		t.Fatalf("parse /metrics: %v\n%s", err, rec.Body)
	}
	return fams
}

// value is the value of the series of family name whose labels are
// exactly labels ("k=v" pairs); -1 when there is none.
func value(fams map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	f := fams[name]
	if f == nil {
		return -1
	}
next:
	for _, m := range f.GetMetric() {
		if len(m.GetLabel()) != len(labels) {
			continue
		}
		for i, l := range m.GetLabel() {
			if l.GetName()+"="+l.GetValue() != labels[i] {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount())
		}
	}
	return -1
}

func TestSeriesMove(t *testing.T) {
	pending := 0
	m := New(Gauges{JournalPending: func() int { return pending }})
	h := m.Handler()
	before := scrape(t, h)
	for _, name := range []string{"go_goroutines", "process_cpu_seconds_total", "mnemo_journal_pending_turns", "mnemo_memory_conflicts_total", "mnemo_memory_hand_edits_total"} {
		if before[name] == nil {
			t.Errorf("%s is not exported", name)
		}
	}
	for name, f := range before {
		if strings.HasPrefix(name, "mnemo_") && f.GetHelp() == "" {
			t.Errorf("%s has no help text", name)
		}
	}

	m.TaskStarted("slack")
	m.TaskStarted("slack")
	m.TaskStarted("slack")
	m.TaskDone("slack", true)
	m.TaskStarted("discord")
	m.TaskDone("discord", false)
	m.LLMRequest("thinker", "ok", 1500*time.Millisecond, 120, 30)
	m.LLMRequest("reflector", "error", time.Second, 0, 0)
	m.ToolCall("memory_read", "ok")
	m.ToolCall("memory_write", "error")
	m.Reflection("ok")
	m.Rollup("written")
	m.MemoryWrite("append", "ok")
	m.MemoryWrite("create", "ok")
	m.MemoryWrite("write", "conflict")
	m.HandEdit()
	m.Refused("discord", "rate")
	m.QueueSource("slack", func() int { return 3 })
	m.FirstToken("thinker", 200*time.Millisecond)
	m.FirstVisible("console", 210*time.Millisecond)
	pending = 7

	got := scrape(t, h)
	for _, tc := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"mnemo_messages_received_total", []string{"platform=slack"}, 3},
		{"mnemo_messages_received_total", []string{"platform=discord"}, 1},
		{"mnemo_replies_sent_total", []string{"platform=slack"}, 1},
		{"mnemo_llm_requests_total", []string{"outcome=ok", "role=thinker"}, 1},
		{"mnemo_llm_requests_total", []string{"outcome=error", "role=reflector"}, 1},
		{"mnemo_llm_request_duration_seconds", []string{"role=thinker"}, 1},
		{"mnemo_llm_tokens_total", []string{"direction=in", "role=thinker"}, 120},
		{"mnemo_llm_tokens_total", []string{"direction=out", "role=thinker"}, 30},
		{"mnemo_llm_tokens_total", []string{"direction=in", "role=reflector"}, -1}, // none reported
		{"mnemo_llm_tokens_total", []string{"direction=out", "role=reflector"}, -1},
		{"mnemo_tool_calls_total", []string{"result=ok", "tool=memory_read"}, 1},
		{"mnemo_tool_calls_total", []string{"result=error", "tool=memory_write"}, 1},
		{"mnemo_reflections_total", []string{"outcome=ok"}, 1},
		{"mnemo_rollups_total", []string{"outcome=written"}, 1},
		{"mnemo_memory_writes_total", []string{"op=append", "outcome=ok"}, 1},
		{"mnemo_memory_writes_total", []string{"op=write", "outcome=conflict"}, 1},
		{"mnemo_memory_conflicts_total", nil, 1},
		{"mnemo_memory_hand_edits_total", nil, 1},
		{"mnemo_queue_depth", []string{"platform=slack"}, 3},
		{"mnemo_tasks_in_flight", []string{"platform=slack"}, 2},
		{"mnemo_tasks_in_flight", []string{"platform=discord"}, 0},
		{"mnemo_replies_sent_total", []string{"platform=discord"}, -1},
		{"mnemo_journal_pending_turns", nil, 7},
		{"mnemo_refused_total", []string{"platform=discord", "reason=rate"}, 1},
	} {
		if v := value(got, tc.name, tc.labels...); v != tc.want {
			t.Errorf("%s%v = %v, want %v", tc.name, tc.labels, v, tc.want)
		}
	}
	// Every family is there, with its help text and its type.
	for name, f := range families {
		fam := got[name]
		if fam == nil {
			t.Errorf("%s is not exported", name)
			continue
		}
		if fam.GetHelp() != f.help || !strings.EqualFold(fam.GetType().String(), f.typ) {
			t.Errorf("%s: help %q type %v, want %q %s", name, fam.GetHelp(), fam.GetType(), f.help, f.typ)
		}
	}
	// The 1.5 s request is in the 2 s bucket and not in the 1 s one.
	for _, m := range got["mnemo_llm_request_duration_seconds"].GetMetric() {
		if m.GetLabel()[0].GetValue() != "thinker" {
			continue
		}
		for _, b := range m.GetHistogram().GetBucket() {
			want := uint64(0)
			if b.GetUpperBound() >= 1.5 {
				want = 1
			}
			if b.GetCumulativeCount() != want {
				t.Errorf("bucket le=%v holds %d, want %d", b.GetUpperBound(), b.GetCumulativeCount(), want)
			}
		}
	}
}

func TestNilMetricsIgnoresCalls(t *testing.T) {
	var m *Metrics
	m.TaskStarted("slack")
	m.TaskDone("slack", true)
	m.LLMRequest("thinker", "ok", time.Second, 1, 1)
	m.ToolCall("memory_read", "ok")
	m.Reflection("ok")
	m.Rollup("failed")
	m.MemoryWrite("write", "conflict")
	m.HandEdit()
	m.QueueSource("slack", func() int { return 1 })
}

func TestNoGaugeSource(t *testing.T) {
	m := New(Gauges{})
	if v := value(scrape(t, m.Handler()), "mnemo_journal_pending_turns"); v != 0 {
		t.Errorf("journal pending with no source = %v, want 0", v)
	}
	m.SetGauges(Gauges{JournalPending: func() int { return 4 }})
	if v := value(scrape(t, m.Handler()), "mnemo_journal_pending_turns"); v != 4 {
		t.Errorf("journal pending after SetGauges = %v, want 4", v)
	}
	m.SetGauges(Gauges{})
	if v := value(scrape(t, m.Handler()), "mnemo_journal_pending_turns"); v != 0 {
		t.Errorf("journal pending after its source is unset = %v, want 0", v)
	}
}

// A label value with quotes, backslashes or a line break (a tool name a
// model made up) is escaped, so the scrape still parses and says it back.
func TestLabelValuesEscaped(t *testing.T) {
	m := New(Gauges{})
	odd := "we\"ird\\tool\nx"
	m.ToolCall(odd, "error")
	m.ToolCall(odd, "error")
	if v := value(scrape(t, m.Handler()), "mnemo_tool_calls_total", "result=error", "tool="+odd); v != 2 {
		t.Errorf("tool %q counted %v, want 2", odd, v)
	}
}

func TestFamilyOf(t *testing.T) {
	for line, want := range map[string]string{
		`mnemo_llm_request_duration_seconds_bucket{role="x",le="1"} 0`: "mnemo_llm_request_duration_seconds",
		`mnemo_llm_request_duration_seconds_sum{role="x"} 0`:           "mnemo_llm_request_duration_seconds",
		`mnemo_llm_request_duration_seconds_count{role="x"} 0`:         "mnemo_llm_request_duration_seconds",
		`mnemo_journal_pending_turns 0`:                                "mnemo_journal_pending_turns",
		`mnemo_tool_calls_total{tool="a_count"} 1`:                     "mnemo_tool_calls_total",
		`go_gc_duration_seconds_count 3`:                               "go_gc_duration_seconds_count",
	} {
		if got := familyOf(line); got != want {
			t.Errorf("familyOf(%q) = %q, want %q", line, got, want)
		}
	}
}

func TestRefusedCounted(t *testing.T) {
	m := New(Gauges{})
	m.Refused("slack", "access")
	m.Refused("slack", "access")
	(*Metrics)(nil).Refused("slack", "rate") // a nil Metrics ignores it
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body := rec.Body.String()
	if !strings.Contains(body, `mnemo_refused_total{platform="slack",reason="access"} 2`) || !strings.Contains(body, "# TYPE mnemo_refused_total counter") {
		t.Fatalf("refused not counted:\n%s", body)
	}
}

// The first-words histograms are served with their type, by role and by
// platform; a nil Metrics ignores them.
func TestFirstWordsHistograms(t *testing.T) {
	m := New(Gauges{})
	m.FirstToken("thinker", 300*time.Millisecond)
	m.FirstVisible("console", 310*time.Millisecond)
	m.FirstVisible("console", 20*time.Millisecond)
	(*Metrics)(nil).FirstToken("thinker", time.Second)
	(*Metrics)(nil).FirstVisible("slack", time.Second)
	fams := scrape(t, m.Handler())
	if v := value(fams, "mnemo_llm_time_to_first_token_seconds", "role=thinker"); v != 1 {
		t.Errorf("first token samples %v", v)
	}
	if v := value(fams, "mnemo_time_to_first_visible_seconds", "platform=console"); v != 2 {
		t.Errorf("first visible samples %v", v)
	}
	for _, name := range []string{"mnemo_llm_time_to_first_token_seconds", "mnemo_time_to_first_visible_seconds"} {
		if f := fams[name]; f == nil || f.GetType() != dto.MetricType_HISTOGRAM || f.GetHelp() == "" {
			t.Errorf("%s: %v", name, f)
		}
	}
}

// BenchmarkMessage records what one streamed console message records.
func BenchmarkMessage(b *testing.B) {
	m := New(Gauges{})
	b.ReportAllocs()
	for b.Loop() {
		m.TaskStarted("console")
		m.FirstToken("thinker", time.Millisecond)
		m.LLMRequest("thinker", "ok", time.Millisecond, 1000, 10)
		m.FirstVisible("console", time.Millisecond)
		m.TaskDone("console", true)
	}
}

// TestNameKeepsEachSeries: a kept name is the series' own, whatever the
// labels (more than are kept too), and two series never share one.
func TestNameKeepsEachSeries(t *testing.T) {
	m := New(Gauges{})
	for range 2 { // made, then kept
		for _, kv := range [][]string{
			{"role", "thinker"}, {"role", "reflector"}, {"role", "thinker", "direction", "in"},
			{"role", "thinker", "direction", "out"}, {"a", "1", "b", "2", "c", "3"}, {"a", "1", "b", "2", "c", "4"}, nil,
		} {
			if got, want := m.name("mnemo_x", kv...), series("mnemo_x", kv...); got != want {
				t.Errorf("name(%q) = %q, want %q", kv, got, want)
			}
		}
	}
	if got, want := m.name("mnemo_y", "role", "thinker"), series("mnemo_y", "role", "thinker"); got != want {
		t.Errorf("another family: %q, want %q", got, want)
	}
	// Kept: every series of up to two labels (five above and mnemo_y's);
	// those of more are made each time, never kept under a shorter key.
	if len(m.names) != 6 {
		t.Errorf("%d names kept, want 6: %v", len(m.names), m.names)
	}
}
