package wiring

import (
	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/memory"
)

// Observer is told what the core does. It is the one place a command
// hooks into the core (cmd/mnemo's metrics, file history and terminal
// chat): Open connects it to the store, the reflector and the Thinker,
// whose own hooks nothing else sets. Its methods may be called from any
// goroutine, and must not block.
type Observer interface {
	// Turn is told of every turn the Thinker finished where memory is on;
	// false keeps it from being reflected (a turn its speaker withdrew).
	Turn(mnemo.Turn) (reflect bool)
	// ToolCall is told of every memory tool call, with its error (nil when
	// it succeeded).
	ToolCall(tool string, err error)
	// Reflection is told how each reflection run ended ("ok", "failed",
	// ...; see reflector.Config.OnRun).
	Reflection(outcome string)
	// Change is told of each change made to a memory file: a tool's or a
	// reflection's write, a restore, a hand edit in an editor.
	Change(memory.Commit)
}
