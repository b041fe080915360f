package mnemo

import (
	"context"
	"encoding/json"
	"errors"
)

// Tool is one function the model may call. Parameters is a JSON Schema
// object describing the arguments; Call receives the raw JSON arguments the
// model sent. A returned error is given back to the model as the tool result
// (prefixed "error: "), never to the user, so a bad call cannot end a task.
type Tool struct {
	Name        string
	Description string
	Parameters  json.RawMessage
	Call        func(ctx context.Context, args json.RawMessage) (string, error)
}

// ErrStorage marks a tool error that is not the model's doing: the disk
// under the tool failed (full, read-only, an I/O error). Callers that must
// not lose work (the reflector) treat a run that met one as failed and
// retry it, instead of trusting the model's account of it.
var ErrStorage = errors.New("storage failure")
