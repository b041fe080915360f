package chat

import (
	"net/http"
	"testing"
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
