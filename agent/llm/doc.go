// Package llm is the provider-neutral vocabulary between mnemo's core and a
// language model: a Request (model name, messages, tool definitions), the
// Response (one assistant message, its finish reason and token usage), the
// Model interface that sends one, Streamer for a Model that can also hand
// on the reply's words as they arrive (Stream calls either), and the errors
// a Model classifies its failures into.
//
// It imports nothing of mnemo. The agent loop, the reflector and the
// commands speak these types; a provider package (llm/openai for any
// OpenAI-compatible server) implements Model in them, and is the only
// place a provider SDK is imported. A new provider, or a recorded
// conversation for a test, is one more Model.
//
// It is a package of its own, rather than part of agent, so that a provider
// depends on the vocabulary alone and not on the agent: the agent's own
// tests can then drive the loop through the real provider.
package llm
