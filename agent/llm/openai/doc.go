// Package openai is mnemo's model provider for any OpenAI-compatible chat
// completions server (OpenAI, Ollama, LM Studio, vLLM, ...): a Client that
// implements llm.Model on github.com/sashabaranov/go-openai, with retries
// and backoff, per-attempt timeouts, a bound on response size, error
// classification into llm's errors, API key redaction and token counters.
//
// It is the only package that imports go-openai (the fake server
// agent/openaitest aside): the rest of mnemo speaks llm's types. Another
// provider would be a sibling package implementing llm.Model.
package openai
