package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mnemo-agent/mnemo/agent/openaitest"
)

// BenchmarkPipedChat is a piped `mnemo chat` through run(), one message
// and its streamed reply per op, against a fake model in this process,
// for a person with pgoFiles memory files; the reflector runs as it does
// in a real chat. `make pgo` profiles it into default.pgo, the profile
// the go command builds mnemo with (profile-guided optimisation).
func BenchmarkPipedChat(b *testing.B) {
	dir := b.TempDir()
	b.Chdir(dir)
	mem := filepath.Join(dir, "data", "memory")
	seedPGO(b, filepath.Join(mem, "pat"))
	srv := openaitest.New(b)
	srv.Handle(func(r openaitest.Request) (openaitest.Reply, bool) {
		return openaitest.Text("Noted, and here is a reply of a few words to: " + r.LastUser()), true
	})
	env := map[string]string{"OPENAI_BASE_URL": srv.URL(), "OPENAI_API_KEY": "sk-bench-key-123456", "MNEMO_DATA_DIR": mem}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := run(stopOn(context.Background()), []string{"chat", "--user", "pat"}, func(k string) string { return env[k] }, inR, outW, io.Discard)
		outW.Close()
		done <- err
	}()
	lines := bufio.NewReader(outR)
	say := func(i int) {
		fmt.Fprintf(inW, "message %d: what did we do on the parser last week?\n", i)
		line, err := lines.ReadString('\n')
		if err != nil || !strings.HasPrefix(line, "Noted") {
			b.Fatalf("reply to message %d: %q, %v", i, line, err)
		}
	}
	say(-1) // the start is not measured
	b.ResetTimer()
	for i := range b.N {
		say(i)
	}
	b.StopTimer()
	inW.Close()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
}

// pgoFiles is the number of memory files BenchmarkPipedChat's person has.
const pgoFiles = 200

// seedPGO writes pgoFiles memory files, half facts and half episode
// months, into a person's folder.
func seedPGO(b *testing.B, user string) {
	b.Helper()
	for i := range pgoFiles / 2 {
		putFile(b, filepath.Join(user, "facts", fmt.Sprintf("topic-%d.md", i)),
			fmt.Sprintf("# Topic %d\n\n> Summary: what the person said about topic %d\n\n- A detail of topic %d.\n", i, i, i))
		putFile(b, filepath.Join(user, "episodes", fmt.Sprintf("%d-%02d.md", 2000+i/12, i%12+1)),
			fmt.Sprintf("# %d-%02d\n\n> Summary: work done in month %d\n\n## Worked on the parser\n\nFixed a bug.\n", 2000+i/12, i%12+1, i))
	}
}
