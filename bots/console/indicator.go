package console

import (
	"fmt"
	"io"
	"time"
)

// spinFrames turn while the model works; spinEvery is how often.
const (
	spinFrames = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
	spinEvery  = 100 * time.Millisecond
)

// thinking shows "⠋ thinking… (Ctrl-C cancels)" on w at once, turns the
// spinner every spinEvery, and returns stop, which clears the line before
// it returns (so the reply starts on a clean line). Only for a terminal.
func thinking(w io.Writer, color bool) (stop func()) {
	frames := []rune(spinFrames)
	draw := func(i int) {
		f := fmt.Sprintf("%c thinking… (Ctrl-C cancels)", frames[i%len(frames)])
		if color {
			f = ansiDim + f + ansiReset
		}
		fmt.Fprint(w, "\r"+f+clearRight)
	}
	draw(0)
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(spinEvery)
		defer tick.Stop()
		for i := 1; ; i++ {
			select {
			case <-quit:
				return
			case <-tick.C:
				draw(i)
			}
		}
	}()
	return func() {
		close(quit)
		<-done
		fmt.Fprint(w, "\r"+clearRight)
	}
}
