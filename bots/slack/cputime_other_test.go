//go:build !linux

package slack

import "time"

var processStart = time.Now()

// threadCPU falls back to the wall clock where there is no per-thread CPU
// time.
func threadCPU() time.Duration { return time.Since(processStart) }
