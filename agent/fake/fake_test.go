package fake_test

import (
	"testing"

	"github.com/mnemo-agent/mnemo/agent/fake"
)

// What every test passes to a fake must satisfy T, so callers compile
// unchanged.
var (
	_ fake.T = (*testing.T)(nil)
	_ fake.T = (*testing.B)(nil)
	_ fake.T = (*testing.F)(nil)
	_ fake.T = testing.TB(nil)
)
