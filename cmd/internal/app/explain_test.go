package app

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"testing"

	"github.com/mnemo-agent/mnemo/agent/llm"
	"github.com/mnemo-agent/mnemo/agent/llm/openai"
)

type fixedModels []string

func (f fixedModels) Models(context.Context) ([]string, error) {
	if f == nil {
		return nil, errors.New("no list")
	}
	return f, nil
}

func TestExplain(t *testing.T) {
	e := explainer{baseURL: "http://user:pw@example.test/v1", model: "m1", models: fixedModels(nil)}
	noHost := &openai.Error{Kind: llm.ErrUnavailable, Err: &url.Error{Op: "Post", URL: "x", Err: &net.DNSError{Err: "no such host", Name: "example.test", IsNotFound: true}}}
	for _, tc := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("think: %w", noHost), "Nothing answered at http://…@example.test/v1: lookup example.test: no such host. Check OPENAI_BASE_URL"},
		{&openai.Error{Kind: llm.ErrUnavailable, StatusCode: 502}, "is failing right now (HTTP 502). Try again in a moment"},
		{&openai.Error{Kind: llm.ErrBadRequest, StatusCode: 404}, `does not know the model "m1" (HTTP 404). Set MNEMO_MODEL (or llm.model) to a model it has.`},
		{&openai.Error{Kind: llm.ErrBadRequest, StatusCode: 404, NotOpenAI: true}, "Nothing at http://…@example.test/v1 speaks the OpenAI API (HTTP 404), and GET /models is not served there either. Set OPENAI_BASE_URL"},
		{&openai.Error{Kind: llm.ErrBadRequest, StatusCode: 501, NotOpenAI: true}, "retrying will not help"},
		{errors.New("a bug"), "Sorry, I couldn't reach the language model just now, so I can't answer that. Please try again in a moment. (a bug)"},
	} {
		if got := e.explain(context.Background(), tc.err); !strings.Contains(got, tc.want) || strings.Contains(got, "pw") {
			t.Errorf("explain(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}
