// Package agent owns the cognitive loop: a Task from an adapter becomes a
// reply through a model (an llm.Model: messages, tool calls and errors in
// the llm package's provider-neutral types) that may call Tools (mnemo.Tool, from the
// root package's vocabulary, which the memory package implements). It
// imports neither memory nor the reflector, nor any adapter, nor a provider
// SDK, so the loop can be tested with fakes alone.
//
// A new tool is a typed parameter struct and mnemo.NewTool[P], which generates
// the JSON schema from P and decodes arguments strictly; a new model
// provider implements llm.Model in a package beside agent/llm/openai; a
// new chat platform is an adapter under bots/ that turns its events into
// Tasks (see bots/internal/pipeline).
package agent
