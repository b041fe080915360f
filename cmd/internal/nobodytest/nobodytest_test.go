package nobodytest

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

func TestMain(m *testing.M) {
	if os.Getenv("NOBODYTEST_CHILD") != "" {
		fmt.Printf("uid %d in %s\n", os.Getuid(), must(os.Getwd()))
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func must(s string, err error) string {
	if err != nil {
		return err.Error()
	}
	return s
}

// The copy runs as nobody, in "/", with the environment given.
func TestCommandRunsAsNobody(t *testing.T) {
	for _, pastModes := range []bool{false, true} {
		out, err := Command(t, pastModes, []string{"NOBODYTEST_CHILD=1"}, "-test.run=^$").Output()
		if err != nil || strings.TrimSpace(string(out)) != fmt.Sprintf("uid %d in /", UID) {
			t.Errorf("pastModes %v: %q, %v", pastModes, out, err)
		}
	}
}
