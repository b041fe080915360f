package slacktest

import (
	"runtime"
	"strings"
	"time"
)

// CheckGoroutines is for a TestMain: after a passing run (code 0) it waits
// up to wait for goroutines whose stacks mention any of markers to end, and
// returns 1 (printing their stacks) if some are still there; otherwise it
// returns code. Use: os.Exit(slacktest.CheckGoroutines(m.Run(), 5*time.Second, "slack/socketmode")).
func CheckGoroutines(code int, wait time.Duration, markers ...string) int {
	if code != 0 {
		return code
	}
	deadline := time.Now().Add(wait)
	for {
		leaked := leakedGoroutines(markers)
		if leaked == "" {
			return code
		}
		if time.Now().After(deadline) {
			println("leaked goroutines:\n" + leaked)
			return 1
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func leakedGoroutines(markers []string) string {
	buf := make([]byte, 1<<20)
	stacks := string(buf[:runtime.Stack(buf, true)])
	var leaked strings.Builder
	for _, g := range strings.Split(stacks, "\n\n") {
		for _, m := range markers {
			if strings.Contains(g, m) {
				leaked.WriteString(g + "\n\n")
				break
			}
		}
	}
	return leaked.String()
}
