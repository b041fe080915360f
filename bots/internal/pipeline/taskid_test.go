package pipeline

import "testing"

func TestTaskID(t *testing.T) {
	a, b := TaskID("slack:T1:C1:1700000000.000100"), TaskID("slack:T1:C1:1700000000.000200")
	if len(a) != 16 || a == b || TaskID("slack:T1:C1:1700000000.000100") != a {
		t.Errorf("TaskID: %q %q", a, b)
	}
}
