// Package metrics owns mnemo's Prometheus metrics: one registry with the
// mnemo_ counters, gauges and histograms, the Go and process collectors,
// and the /metrics handler. The core packages do not import it: each
// reports through a small hook it defines (a func field in its Config or
// Options), and cmd wires those hooks to the methods here.
package metrics
