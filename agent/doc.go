// Package agent owns the cognitive loop: a Task from an adapter becomes a
// reply through an OpenAI-compatible model that may call Tools. It defines the
// Tool type the memory and reflector packages implement, and imports neither
// of them nor any adapter, so the loop can be tested with fakes alone.
package agent
