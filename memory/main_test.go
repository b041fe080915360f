package memory

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that no watcher or wait outlives its store's Close.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
