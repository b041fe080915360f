// Package metrics owns mnemo's Prometheus metrics: one set of the mnemo_
// counters, gauges and histograms (on VictoriaMetrics/metrics), the Go and
// process series, and the /metrics handler. The core packages do not
// import it: each reports through a small hook it defines (a func field in
// its Config or Options), and cmd wires those hooks to the methods here.
package metrics
