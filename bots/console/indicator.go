package console

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// spinFrames turn while the model works; spinEvery is how often.
const (
	spinFrames = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
	spinEvery  = 100 * time.Millisecond
)

// thinkingLabel is the spinner's label until a status replaces it.
const thinkingLabel = "thinking…"

// spinner is the line "⠋ thinking… (Ctrl-C cancels)" while the model
// works; a status ("reading facts/user.md…") may replace its label.
type spinner struct {
	w     io.Writer
	color bool

	mu    sync.Mutex
	text  string
	frame int
	quit  chan struct{}
	done  chan struct{}
	once  sync.Once
}

// thinking shows the spinner on w at once, turns it every spinEvery, and
// returns it; stop clears its line. Only for a terminal.
func thinking(w io.Writer, color bool) *spinner {
	s := &spinner{w: w, color: color, text: thinkingLabel, quit: make(chan struct{}), done: make(chan struct{})}
	s.draw()
	go func() {
		defer close(s.done)
		tick := time.NewTicker(spinEvery)
		defer tick.Stop()
		for {
			select {
			case <-s.quit:
				return
			case <-tick.C:
				s.mu.Lock()
				s.frame++
				s.draw()
				s.mu.Unlock()
			}
		}
	}()
	return s
}

// draw writes the spinner's line; s.mu is held (or not yet shared).
func (s *spinner) draw() {
	frames := []rune(spinFrames)
	f := fmt.Sprintf("%c %s (Ctrl-C cancels)", frames[s.frame%len(frames)], s.text)
	if s.color {
		f = ansiDim + f + ansiReset
	}
	fmt.Fprint(s.w, "\r"+f+clearRight)
}

// label replaces the spinner's label ("" for the default) at once.
func (s *spinner) label(text string) {
	if text == "" {
		text = thinkingLabel
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.quit:
		return // stopped: the line is the reply's now
	default:
	}
	s.text = text
	s.draw()
}

// stop ends the spinner and clears its line before it returns (so the
// reply starts on a clean line). Later calls do nothing.
func (s *spinner) stop() {
	s.once.Do(func() {
		s.mu.Lock()
		close(s.quit)
		s.mu.Unlock()
		<-s.done
		fmt.Fprint(s.w, "\r"+clearRight)
	})
}
