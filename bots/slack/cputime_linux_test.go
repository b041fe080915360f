package slack

import (
	"syscall"
	"time"
)

// threadCPU is the CPU time the calling OS thread has used (the caller
// locks itself to its thread): unlike the wall clock, it does not count
// the time other processes on a loaded machine take.
func threadCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(1 /* RUSAGE_THREAD */, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
