package agent

import "github.com/mnemo-agent/mnemo/agent/text"

// RedactURLs is text.RedactURLs.
//
// Deprecated: use text.RedactURLs (the adapters do); kept for cmd/mnemo
// until it moves to cmd/internal/app.
func RedactURLs(s string) string { return text.RedactURLs(s) }
