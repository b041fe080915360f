package openai

import "github.com/mnemo-agent/mnemo/agent/llm"

// The model errors under their short names, for the tests of this package
// (whose fixtures name their client "llm").
var (
	ErrRateLimited      = llm.ErrRateLimited
	ErrQuota            = llm.ErrQuota
	ErrAuth             = llm.ErrAuth
	ErrUnavailable      = llm.ErrUnavailable
	ErrContextLength    = llm.ErrContextLength
	ErrBadRequest       = llm.ErrBadRequest
	ErrBadResponse      = llm.ErrBadResponse
	ErrTruncated        = llm.ErrTruncated
	ErrResponseTooLarge = llm.ErrResponseTooLarge
)
