package app

import (
	"errors"
	"strings"
	"sync"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/cmd/internal/wiring"
	"github.com/mnemo-agent/mnemo/memory"
)

// coreObserver is what mnemo does with what the core tells: changes to
// the files go to the history and the metrics, tool calls and
// reflections to the metrics, and a turn its speaker withdrew (Ctrl-C at
// the terminal) is not reflected.
type coreObserver struct {
	changes   *changeLog
	withdrawn *sync.Map // task IDs (app.withdraw)
}

var _ wiring.Observer = coreObserver{}

func (o coreObserver) Turn(t mnemo.Turn) bool {
	_, withdrawn := o.withdrawn.LoadAndDelete(t.TaskID)
	return !withdrawn
}

// ToolCall counts a tool's calls by result.
func (o coreObserver) ToolCall(tool string, err error) {
	m := o.changes.metrics
	result := "ok"
	if err != nil {
		result = "error"
	}
	m.ToolCall(tool, result)
	if errors.Is(err, memory.ErrConflict) { // a person's edit won: the model must re-read
		m.MemoryWrite(strings.TrimPrefix(tool, "memory_"), "conflict")
	}
}

func (o coreObserver) Reflection(outcome string) { o.changes.metrics.Reflection(outcome) }

func (o coreObserver) Change(c memory.Commit) { o.changes.onChange(c) }
