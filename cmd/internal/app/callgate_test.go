package app

import (
	"context"
	"errors"
	"testing"

	"go.uber.org/goleak"

	"github.com/mnemo-agent/mnemo/agent/llm"
)

// errGateClosed is the cause a gate is closed with in these tests.
var errGateClosed = errors.New("shutdown.grace is over")

// blockingModel answers when its context ends, with the context's cause.
type blockingModel struct{ started chan struct{} }

func (m blockingModel) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	if req.Model == "quick" {
		return llm.Response{Model: "quick"}, nil
	}
	close(m.started)
	<-ctx.Done()
	return llm.Response{}, context.Cause(ctx)
}

func TestCallGate(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	g := newCallGate()
	m := g.model(blockingModel{started: make(chan struct{})})
	if resp, err := m.Complete(context.Background(), llm.Request{Model: "quick"}); err != nil || resp.Model != "quick" {
		t.Fatalf("a call through the open gate = %+v, %v", resp, err)
	}
	// A call in progress ends when the gate closes, with the gate's cause.
	bm := blockingModel{started: make(chan struct{})}
	m = g.model(bm)
	errc := make(chan error, 1)
	go func() {
		_, err := m.Complete(context.Background(), llm.Request{Model: "slow"})
		errc <- err
	}()
	<-bm.started
	g.close(errGateClosed)
	if err := <-errc; err != errGateClosed {
		t.Errorf("call in progress when the gate closed = %v", err)
	}
	// The caller's own cancellation still works, and a later call fails at once.
	bm = blockingModel{started: make(chan struct{})}
	if _, err := g.model(bm).Complete(context.Background(), llm.Request{Model: "slow"}); err != errGateClosed {
		t.Errorf("call after the gate closed = %v", err)
	}
	g2 := newCallGate()
	ctx, cancel := context.WithCancel(context.Background())
	bm = blockingModel{started: make(chan struct{})}
	go func() { <-bm.started; cancel() }()
	if _, err := g2.model(bm).Complete(ctx, llm.Request{Model: "slow"}); !errors.Is(err, context.Canceled) {
		t.Errorf("call whose caller gave up = %v", err)
	}
}

// streamingModel hands on its first words, then waits for its context to
// end (or, for "quick", completes).
type streamingModel struct{ blockingModel }

func (m streamingModel) Stream(ctx context.Context, req llm.Request, onText func(string) error) (llm.Response, error) {
	if err := onText("first "); err != nil {
		return llm.Response{}, err
	}
	if req.Model == "quick" {
		return llm.Response{Model: "quick", Message: llm.Message{Content: "first "}}, nil
	}
	close(m.started)
	<-ctx.Done()
	return llm.Response{Message: llm.Message{Content: "first "}}, context.Cause(ctx)
}

// A stream through the gate is cut when the gate closes; a model that
// does not stream is asked whole through it.
func TestCallGateStream(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	g := newCallGate()
	var shown []string
	onText := func(d string) error { shown = append(shown, d); return nil }
	sm := streamingModel{blockingModel{started: make(chan struct{})}}
	if resp, err := llm.Stream(context.Background(), g.model(sm), llm.Request{Model: "quick"}, onText); err != nil || resp.Model != "quick" {
		t.Fatalf("quick stream = %+v, %v", resp, err)
	}
	errc := make(chan error, 1)
	go func() {
		_, err := llm.Stream(context.Background(), g.model(sm), llm.Request{Model: "slow"}, onText)
		errc <- err
	}()
	<-sm.started
	g.close(errGateClosed)
	if err := <-errc; err != errGateClosed || len(shown) != 2 {
		t.Errorf("stream when the gate closed = %v, shown %q", err, shown)
	}
	// Complete-only models: llm.Stream completes, and hands the text on once.
	g2 := newCallGate()
	shown = nil
	if _, err := llm.Stream(context.Background(), g2.model(blockingModel{started: make(chan struct{})}), llm.Request{Model: "quick"}, onText); err != nil || len(shown) != 0 {
		t.Errorf("a model without Stream = %v, shown %q", err, shown)
	}
}

// errAtEntry answers at once with its context's error as it found it.
type errAtEntry struct{}

func (errAtEntry) Complete(ctx context.Context, _ llm.Request) (llm.Response, error) {
	return llm.Response{}, context.Cause(ctx)
}

// A call made after the gate closed finds its context cancelled when it
// starts: a model that answers at once cannot beat the cancellation.
func TestCallGateClosedBeforeTheCall(t *testing.T) {
	g := newCallGate()
	g.close(errGateClosed)
	for range 100 {
		if _, err := g.model(errAtEntry{}).Complete(context.Background(), llm.Request{}); err != errGateClosed {
			t.Fatalf("a call after the gate closed started with %v", err)
		}
	}
}
