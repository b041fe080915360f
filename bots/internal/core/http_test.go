package core

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"testing/synctest"
	"time"
)

func TestNewHTTPClient(t *testing.T) {
	c := NewHTTPClient(time.Second)
	tr, ok := c.Transport.(*http.Transport)
	if !ok || c.Timeout != time.Second || tr.MaxIdleConnsPerHost != MaxIdleConnsPerHost || tr.Proxy == nil {
		t.Errorf("client %+v, transport %+v", c, tr)
	}
	if tr == http.DefaultTransport {
		t.Error("the default transport itself is shared and changed")
	}
}

// TestSleep: Sleep waits its time, or returns the context's error as soon
// as it ends.
func TestSleep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		if err := Sleep(t.Context(), time.Minute); err != nil || time.Since(start) != time.Minute {
			t.Errorf("Sleep = %v after %v", err, time.Since(start))
		}
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		start = time.Now()
		if err := Sleep(ctx, time.Hour); !errors.Is(err, context.DeadlineExceeded) || time.Since(start) != time.Second {
			t.Errorf("Sleep = %v after %v", err, time.Since(start))
		}
	})
}
