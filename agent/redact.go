package agent

import "github.com/mnemo-agent/mnemo/agent/llm"

// RedactURLs removes credentials written into URLs anywhere in s (see
// llm.RedactURLs); the adapters log their API addresses through it.
func RedactURLs(s string) string { return llm.RedactURLs(s) }
