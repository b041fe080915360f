package app

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/agent/llm"
	"github.com/mnemo-agent/mnemo/agent/llm/openai"
	"github.com/mnemo-agent/mnemo/cmd/internal/userdata"
)

// Every kind of model failure the terminal explains says what happened and
// what to change, in the operator's words: the quota, the key, the rate,
// the model the server has (with what it offers), a reply it cannot use,
// a request it refused (in the server's own words when it gave them).
func TestExplainEveryKind(t *testing.T) {
	e := explainer{baseURL: "http://127.0.0.1:1/v1", model: "m1", models: fixedModels{"llama3", "qwen"}}
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"quota", &openai.Error{Kind: llm.ErrQuota, StatusCode: 429}, "The model provider at http://127.0.0.1:1/v1 says this account's quota is used up (HTTP 429). Check the account's plan and billing; retrying will not help."},
		{"key", &openai.Error{Kind: llm.ErrAuth, StatusCode: 401}, "The model server at http://127.0.0.1:1/v1 refused the API key (HTTP 401). Set OPENAI_API_KEY to a valid key"},
		{"rate", &openai.Error{Kind: llm.ErrRateLimited, StatusCode: 429}, "is limiting how fast mnemo may ask (HTTP 429). Wait a minute, then send your message again."},
		{"rate without a status", llm.ErrRateLimited, "is limiting how fast mnemo may ask. Wait a minute"},
		{"unknown model", &openai.Error{Kind: llm.ErrBadRequest, StatusCode: 404}, `does not know the model "m1" (HTTP 404). Set MNEMO_MODEL (or llm.model) to a model it has. It offers: llama3, qwen.`},
		{"unusable reply", &openai.Error{Kind: llm.ErrBadResponse, Detail: "an HTML page came back; set llm.stream: false"}, "sent a reply mnemo cannot use: an HTML page came back; set llm.stream: false."},
		{"refused, in its words", &openai.Error{Kind: llm.ErrBadRequest, StatusCode: 400, Err: errors.New("server said: tools are not supported")},
			`refused the request (HTTP 400): tools are not supported. Check that it supports chat completions with tools for the model "m1" (MNEMO_MODEL).`},
		{"refused, no words", &openai.Error{Kind: llm.ErrBadRequest, StatusCode: 422}, "refused the request (HTTP 422): " + llm.ErrBadRequest.Error() + "."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := e.explain(context.Background(), tc.err); !strings.Contains(got, tc.want) {
				t.Errorf("explain = %q\nwant it to hold %q", got, tc.want)
			}
		})
	}
	// A server that lists no models: the answer offers none.
	e.models = fixedModels{}
	if got := e.explain(context.Background(), &openai.Error{Kind: llm.ErrBadRequest, StatusCode: 404}); strings.Contains(got, "It offers") {
		t.Errorf("an empty list offered: %q", got)
	}
}

// The terminal's handler puts the explanation in place of the apology a
// failed reply carries; a reply that did not fail is left as it is.
func TestExplainingHandlerExplains(t *testing.T) {
	ex := explainer{baseURL: "http://127.0.0.1:1/v1", model: "m1", models: fixedModels(nil)}
	failed := explainingHandler{stubHandler{reply: mnemo.Reply{Text: mnemo.ApologyText, Failed: true,
		Err: &openai.Error{Kind: llm.ErrAuth, StatusCode: 403}}}, ex}
	r, err := failed.Handle(context.Background(), mnemo.Task{})
	if err != nil || !r.Failed || !strings.HasPrefix(r.Text, "The model server at http://127.0.0.1:1/v1 refused the API key (HTTP 403).") {
		t.Errorf("failed reply: %+v, %v", r, err)
	}
	ok := explainingHandler{stubHandler{reply: mnemo.Reply{Text: "fine"}}, ex}
	if r, _ := ok.Handle(context.Background(), mnemo.Task{}); r.Text != "fine" {
		t.Errorf("a good reply was changed: %+v", r)
	}
}

// The one answer a person gets after a forget, for each outcome.
func TestForgottenAnswer(t *testing.T) {
	missing := errors.New("no such file")
	for _, tc := range []struct {
		f    Forgotten
		r    userdata.Request
		want string
	}{
		{Forgotten{}, userdata.Request{Owner: "ann"}, "Done: I have forgotten everything about you, ann."},
		{Forgotten{}, userdata.Request{Owner: "ann", Path: "facts/food.md"}, "Done: I have forgotten facts/food.md."},
		{Forgotten{Dropped: "dropped 1 turn waiting to be reflected"}, userdata.Request{Owner: "ann"},
			"Done: I have forgotten everything about you, ann. (Also dropped 1 turn waiting to be reflected.)"},
		{Forgotten{Missing: missing}, userdata.Request{Owner: "ann"}, "There was nothing to forget: I don't remember anything about you."},
		{Forgotten{Missing: missing, Dropped: "x"}, userdata.Request{Owner: "ann", Path: "facts/a.md"}, "There was nothing to forget: I have no file facts/a.md about you."},
	} {
		if got := tc.f.Answer(tc.r); got != tc.want {
			t.Errorf("Answer(%+v, %+v) = %q; want %q", tc.f, tc.r, got, tc.want)
		}
	}
}

// /memory why through the running app: the person's matching line with
// where it came from; in a channel a private file's line is not shown.
func TestAppWhy(t *testing.T) {
	w := newWorld(t)
	w.putMemory(t, "ann/facts/food.md", "# Food\n\n> Summary: food likes\n\n- Likes ramen <!-- src: slack · dm · 2026-02-01 -->\n")
	a := w.open(t, "")
	out, err := a.Why("ann", "", "ramen", false)
	if err != nil || !strings.Contains(out, "facts/food.md") || !strings.Contains(out, "Likes ramen") || !strings.Contains(out, "2026-02-01") {
		t.Errorf("Why in private = %q, %v", out, err)
	}
	out, err = a.Why("ann", "#slack-T0TEAM-C0CHAN", "ramen", true)
	if err != nil || strings.Contains(out, "Likes ramen") {
		t.Errorf("Why in a channel shows a private file: %q, %v", out, err)
	}
	if _, err := a.Why("../x", "", "ramen", false); err == nil {
		t.Error("Why accepted a bad user name")
	}
}
