package pipeline

import (
	"crypto/sha256"
	"encoding/hex"
)

// TaskID is the task id of the platform message with intake id id: the
// same for the same message, also when it is answered again after a
// restart, so its log lines and its turn can be told apart from others'
// and matched with the first attempt's. 16 hex digits, as the agent's.
func TaskID(id string) string {
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:8])
}
