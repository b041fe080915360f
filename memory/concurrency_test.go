package memory

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// Several users, many goroutines, and a person editing fact files by
// rename at the same time: under -race nothing is torn, no successful
// append is lost, and every conflict is reported as ErrConflict.
func TestConcurrentUsersAndHumanEdits(t *testing.T) {
	s := newStore(t)
	users := []string{"alice", "bob", "carol"}
	const workers, rounds = 4, 15
	var appended sync.Map // "user/entry title" -> true
	var conflicts atomic.Int64
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for _, name := range users {
		writeFile(t, filepath.Join(s.Dir(), name, "facts/user.md"), userFact)
		// The person: rewrites the fact file by rename, as sed -i does.
		wg.Add(1)
		go func(name string) {
			defer wg.Done()
			p := filepath.Join(s.Dir(), name, "facts/user.md")
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				b, err := os.ReadFile(p)
				if err != nil {
					continue
				}
				tmp := p + ".sedtmp"
				os.WriteFile(tmp, append(b, fmt.Sprintf("- human %d\n", i)...), 0o644)
				os.Rename(tmp, p)
			}
		}(name)
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func(name string, w int) {
				defer wg.Done()
				u, _ := s.User(name)
				sess := u.NewSession()
				for r := 0; r < rounds; r++ {
					title := fmt.Sprintf("w%d-r%d", w, r)
					if err := sess.Append("episodes/2026-02.md", "## "+title+"\n- Summary: "+title+"\n- Date: 2026-02-01\n", ""); err != nil {
						t.Errorf("append %s/%s: %v", name, title, err)
						continue
					}
					appended.Store(name+"/"+title, true)
					if _, err := sess.Read("facts/user.md"); err != nil {
						t.Errorf("read: %v", err)
					}
					_, err := sess.Patch("facts/user.md", []Patch{{OldText: "- Language: Chinese", NewText: "- Language: Chinese"}})
					if errors.Is(err, ErrConflict) {
						conflicts.Add(1)
					} else if err != nil {
						t.Errorf("patch: %v", err)
					}
					if _, err := u.List(); err != nil {
						t.Errorf("list: %v", err)
					}
				}
			}(name, w)
		}
	}
	// Let the workers finish, then stop the people.
	done := make(chan struct{})
	go func() {
		for {
			n := 0
			appended.Range(func(any, any) bool { n++; return true })
			if n == len(users)*workers*rounds {
				close(done)
				return
			}
			select {
			case <-stop:
				return
			default:
			}
		}
	}()
	<-done
	close(stop)
	wg.Wait()

	for _, name := range users {
		text := readFile(t, filepath.Join(s.Dir(), name, "episodes/2026-02.md"))
		_, entries, problems := parseEpisodes(text)
		if len(problems) > 0 {
			t.Errorf("%s: torn entries: %v", name, problems)
		}
		seen := map[string]int{}
		for _, e := range entries {
			seen[e.Title]++
		}
		for w := 0; w < workers; w++ {
			for r := 0; r < rounds; r++ {
				if title := fmt.Sprintf("w%d-r%d", w, r); seen[title] != 1 {
					t.Errorf("%s: entry %s appears %d times", name, title, seen[title])
				}
			}
		}
		fact := readFile(t, filepath.Join(s.Dir(), name, "facts/user.md"))
		if !strings.HasPrefix(fact, userFact) {
			t.Errorf("%s: fact file damaged: %q", name, fact[:min(80, len(fact))])
		}
	}
	t.Logf("%d patches met a person's edit and reported a conflict", conflicts.Load())
}
