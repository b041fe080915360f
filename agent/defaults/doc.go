// Package defaults fills the unset fields of a configuration — a count or
// a duration not above zero, a nil logger — the one way the agent, the
// reflector, the model client and the stores all do it.
package defaults
