package queue

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run if a goroutine the queue starts
// outlives the tests.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
