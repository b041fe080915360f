package openai

// Tests added after mutation testing (make mutation): each pins a
// behaviour that a surviving mutant showed no test noticed breaking.
// .gremlins-equivalent.md lists the mutants that cannot be killed.

import (
	"errors"
	"strings"
	"testing"
)

// TestLLMRedactsKeyOfMinimumLength: a key of exactly minRedactLen
// characters is a secret and is scrubbed; one character shorter is a
// placeholder and is left alone.
func TestLLMRedactsKeyOfMinimumLength(t *testing.T) {
	key := strings.Repeat("k", minRedactLen)
	if got := (&Client{apiKey: key}).redact(errors.New("bad key " + key)).Error(); got != "bad key [REDACTED]" {
		t.Errorf("%d-character key: %q", minRedactLen, got)
	}
	short := key[1:]
	if got := (&Client{apiKey: short}).redact(errors.New("bad key " + short)).Error(); got != "bad key "+short {
		t.Errorf("%d-character key: %q", len(short), got)
	}
}
