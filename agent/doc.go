// Package agent owns the cognitive loop: a Task from an adapter becomes a
// reply through a model (an llm.Model: messages, tool calls and errors in
// the llm package's provider-neutral types) that may call Tools (mnemo.Tool, from the
// root package's vocabulary, which the memory package implements). It
// imports neither memory nor the reflector, nor any adapter, nor a provider
// SDK, so the loop can be tested with fakes alone.
//
// A Task with a Stream is shown its reply while the model writes it
// (stream.go): the words of every model call go to Stream.Text as they
// arrive, a tool's work to Stream.Status, and the reply is exactly the
// words shown. A reply cut after its first words is Failed and Cut, and is
// neither remembered nor handed to OnTurn.
//
// A new tool is a typed parameter struct and mnemo.NewTool[P], which generates
// the JSON schema from P and decodes arguments strictly; a new model
// provider implements llm.Model in a package beside agent/llm/openai; a
// new chat platform is an adapter under bots/ that turns its events into
// Tasks (see bots/internal/pipeline).
package agent
