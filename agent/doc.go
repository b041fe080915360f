// Package agent owns the cognitive loop: a Task from an adapter becomes a
// reply through a model (an llm.Model: messages, tool calls and errors in
// the llm package's provider-neutral types) that may call Tools. It defines
// the Tool type the memory and reflector packages implement, and imports
// neither of them, nor any adapter, nor a provider SDK, so the loop can be
// tested with fakes alone.
package agent
