package agent

import (
	"context"
	"encoding/json"
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
