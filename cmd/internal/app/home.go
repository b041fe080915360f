package app

import (
	"sync"

	"github.com/mnemo-agent/mnemo/bots/platform"
)

// Home is what a person's home surface (Slack's App Home tab) shows of
// user's own memory (userdata.Service.Home).
func (m *Memory) Home(user string) (platform.Home, error) { return m.svc.Home(user) }

// SearchHome is user's own memory searched for a home surface
// (userdata.Service.SearchHome).
func (m *Memory) SearchHome(user, query string, limit int) ([]platform.HomeHit, error) {
	return m.svc.SearchHome(user, query, limit)
}

// memoryWatcher is a running adapter that wants to know whose memory
// changed: Slack re-publishes that person's App Home tab.
type memoryWatcher interface{ MemoryChanged(user string) }

// watchers are told whose memory changed: every change the store makes or
// its watcher sees (a reflection, a /memory share, a hand edit:
// changeLog.onChange) and every forget (Memory.Forget, which removes a
// whole folder without a change per file). Each is told synchronously and
// must not block or call back into the store.
type watchers struct {
	mu   sync.RWMutex
	list []memoryWatcher
}

// use makes the adapters among ads that watch memory the ones told.
func (w *watchers) use(ads []Adapter) {
	var list []memoryWatcher
	for _, ad := range ads {
		if mw, ok := ad.Adapter.(memoryWatcher); ok {
			list = append(list, mw)
		}
	}
	w.mu.Lock()
	w.list = list
	w.mu.Unlock()
}

// tell says that user's memory changed.
func (w *watchers) tell(user string) {
	w.mu.RLock()
	defer w.mu.RUnlock()
	for _, mw := range w.list {
		mw.MemoryChanged(user)
	}
}
