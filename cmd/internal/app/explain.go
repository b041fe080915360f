package app

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/agent/llm"
	"github.com/mnemo-agent/mnemo/agent/llm/openai"
)

// modelLister lists the models a server offers (*openai.Client).
type modelLister interface {
	Models(ctx context.Context) ([]string, error)
}

// explainer words a model failure for the person at the terminal chat,
// who runs the server too: the cause and what to change, in the
// conversation rather than only in a log line.
type explainer struct {
	baseURL string // as resolved: the address that was tried
	model   string
	models  modelLister
}

func (e explainer) explain(ctx context.Context, err error) string {
	var oe *openai.Error
	errors.As(err, &oe)
	url := llm.RedactURLs(e.baseURL)
	status := func() string {
		if oe != nil && oe.StatusCode != 0 {
			return fmt.Sprintf(" (HTTP %d)", oe.StatusCode)
		}
		return ""
	}
	switch {
	case errors.Is(err, llm.ErrQuota):
		return fmt.Sprintf("The model provider at %s says this account's quota is used up%s. Check the account's plan and billing; retrying will not help.", url, status())
	case errors.Is(err, llm.ErrAuth):
		return fmt.Sprintf("The model server at %s refused the API key%s. Set OPENAI_API_KEY to a valid key for it (or llm.apiKey in the configuration); retrying will not help.", url, status())
	case errors.Is(err, llm.ErrRateLimited):
		return fmt.Sprintf("The model server at %s is limiting how fast mnemo may ask%s. Wait a minute, then send your message again.", url, status())
	case errors.Is(err, openai.ErrNotOpenAI):
		return fmt.Sprintf("Nothing at %s speaks the OpenAI API%s, and GET /models is not served there either. Set OPENAI_BASE_URL (or llm.baseURL) to an OpenAI-compatible server's API base, which usually ends in /v1 (Ollama: http://127.0.0.1:11434/v1); retrying will not help.", url, status())
	case errors.Is(err, llm.ErrBadRequest) && oe != nil && oe.StatusCode == 404:
		offer := ""
		if models, lerr := e.models.Models(ctx); lerr == nil && len(models) > 0 {
			offer = " It offers: " + strings.Join(models[:min(len(models), 20)], ", ") + "."
		}
		return fmt.Sprintf("The model server at %s does not know the model %q (HTTP 404). Set MNEMO_MODEL (or llm.model) to a model it has.%s", url, e.model, offer)
	case errors.Is(err, llm.ErrUnavailable) && (oe == nil || oe.StatusCode == 0):
		return fmt.Sprintf("Nothing answered at %s: %s. Check OPENAI_BASE_URL (or llm.baseURL), and that the model server is running.", url, cause(err))
	case errors.Is(err, llm.ErrUnavailable):
		return fmt.Sprintf("The model server at %s is failing right now%s. Try again in a moment; if it goes on, check the server.", url, status())
	case errors.Is(err, llm.ErrBadResponse) && oe != nil && oe.Detail != "":
		// A body that is no chat completion (or stream): the detail says
		// what it was, and what to set (llm.stream: false).
		return fmt.Sprintf("The model server at %s sent a reply mnemo cannot use: %s.", url, oe.Detail)
	case errors.Is(err, llm.ErrBadRequest) && oe != nil && oe.StatusCode != 0:
		return fmt.Sprintf("The model server at %s refused the request%s: %s. Check that it supports chat completions with tools for the model %q (MNEMO_MODEL).", url, status(), serverSaid(oe), e.model)
	}
	return mnemo.ApologyText + " (" + cause(err) + ")"
}

// cause is the innermost message of err: "connection refused", "no such
// host", without the layers that repeat the address.
func cause(err error) string {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			break
		}
		err = next
	}
	if multi, ok := err.(interface{ Unwrap() []error }); ok && len(multi.Unwrap()) > 0 {
		errs := multi.Unwrap()
		return cause(errs[len(errs)-1])
	}
	return err.Error()
}

// explainingHandler gives the terminal chat the explanation instead of
// the apology.
type explainingHandler struct {
	h         Handler
	explainer explainer
}

func (x explainingHandler) Handle(ctx context.Context, t mnemo.Task) (mnemo.Reply, error) {
	reply, err := x.h.Handle(ctx, t)
	if err != nil || !reply.Failed || reply.Err == nil || errors.Is(reply.Err, context.Canceled) || reply.Cut {
		return reply, err // a cancelled reply (Ctrl-C) is no failure; a cut one's Text is what was shown
	}
	reply.Text = x.explainer.explain(ctx, reply.Err)
	return reply, nil
}

// serverSaid is the server's own words in an error, or its status.
func serverSaid(oe *openai.Error) string {
	if _, said, ok := strings.Cut(oe.Error(), "server said: "); ok {
		return said
	}
	return cause(oe)
}
