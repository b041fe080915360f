package main

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/binary"
	"runtime/pprof"
	"strings"
	"testing"
	"time"
)

// spin burns a fixed amount of CPU, about d on an idle machine: a fixed
// amount of work, not of wall time, so that a loaded machine (which
// stretches wall time, not CPU time) profiles it the same.
func spin(d time.Duration) int {
	buf := make([]byte, 1024)
	n := 0
	for i := int64(0); i < int64(d/time.Microsecond); i++ {
		sum := sha256.Sum256(buf)
		buf[0] = sum[0]
		n += int(sum[1])
	}
	return n
}

// A real CPU profile: the work done under a label is counted under it,
// the rest under none.
func TestProfileBySide(t *testing.T) {
	p := startProfile()
	if !p.on {
		t.Skip("a CPU profile is running already")
	}
	asSide(sideFakeModel, func() { spin(300 * time.Millisecond) })
	done := make(chan struct{})
	asSide(sideFakeDiscord, func() {
		go func() { // started under the label: keeps it
			defer close(done)
			spin(300 * time.Millisecond)
		}()
	})
	<-done
	spin(100 * time.Millisecond)
	sides, err := p.stop()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("sides %v", sides)
	if sides[sideFakeModel] < int64(100*time.Millisecond) || sides[sideFakeDiscord] < int64(100*time.Millisecond) {
		t.Errorf("sides %v: want ≥ 100ms for each label", sides)
	}
	if _, ok := sides[sideMnemo]; !ok && len(sides) < 2 {
		t.Errorf("sides %v", sides)
	}
}

// While another CPU profile runs there is none: stop says nothing.
func TestProfileBusy(t *testing.T) {
	var buf bytes.Buffer
	if err := pprof.StartCPUProfile(&buf); err != nil {
		t.Skip("a CPU profile is running already")
	}
	defer pprof.StopCPUProfile()
	p := startProfile()
	if sides, err := p.stop(); sides != nil || err != nil {
		t.Errorf("stop = %v, %v; want nothing", sides, err)
	}
	// A whole run without a profile reports no sides.
	rep := runJSON(t, "-users", "1", "-messages", "1", "-files", "2")
	if rep.CPUBySide != nil {
		t.Errorf("by side without a profile: %v", rep.CPUBySide)
	}
}

func TestBySide(t *testing.T) {
	if got := bySide(nil, 1, platformDirect); got != nil {
		t.Errorf("no samples: %v", got)
	}
	got := bySide(map[string]int64{sideMnemo: 30, sideFakeModel: 10}, 2, platformDiscord)
	if len(got) != 4 || got[sideMnemo] != 1.5 || got[sideFakeModel] != 0.5 || got[sideFakeDiscord] != 0 || got[sideTool] != 0 {
		t.Errorf("bySide = %v", got)
	}
	if got := bySide(map[string]int64{sideMnemo: 1}, 2, platformDirect); len(got) != 3 {
		t.Errorf("direct: %v", got)
	}
}

// Hand-made profile.proto messages.
func pbVarint(num int, v uint64) []byte {
	b := binary.AppendUvarint(nil, uint64(num)<<3)
	return binary.AppendUvarint(b, v)
}

func pbBytes(num int, data []byte) []byte {
	b := binary.AppendUvarint(nil, uint64(num)<<3|2)
	b = binary.AppendUvarint(b, uint64(len(data)))
	return append(b, data...)
}

func join(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

func gz(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	if _, err := w.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestCPUByLabel(t *testing.T) {
	strs := join(pbBytes(6, nil), pbBytes(6, []byte("samples")), pbBytes(6, []byte("cpu")),
		pbBytes(6, []byte("side")), pbBytes(6, []byte("fake")), pbBytes(6, []byte("other")))
	types := join(pbBytes(1, join(pbVarint(1, 1), pbVarint(2, 1))), pbBytes(1, join(pbVarint(1, 2))))
	label := func(k, v uint64) []byte { return pbBytes(3, join(pbVarint(1, k), pbVarint(2, v), pbVarint(3, 7))) }
	sample := func(values []byte, labels ...[]byte) []byte {
		return pbBytes(2, join(append([][]byte{pbBytes(1, []byte{1, 2}), values}, labels...)...))
	}
	packed := func(vs ...uint64) []byte {
		var b []byte
		for _, v := range vs {
			b = binary.AppendUvarint(b, v)
		}
		return pbBytes(2, b)
	}
	fixed := join(binary.AppendUvarint(nil, 9<<3|1), make([]byte, 8), binary.AppendUvarint(nil, 10<<3|5), make([]byte, 4))
	good := join(types,
		sample(join(pbVarint(2, 1), pbVarint(2, 100))),
		sample(packed(2, 200, 5), label(3, 4)),
		sample(join(pbVarint(2, 1), pbVarint(2, 40)), label(5, 4)), // another key
		fixed, strs)
	got, err := cpuByLabel(gz(t, good), "side", "none")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got["none"] != 140 || got["fake"] != 200 {
		t.Errorf("cpuByLabel = %v", got)
	}

	for name, tc := range map[string]struct {
		raw  []byte
		want string
	}{
		"bad tag":        {[]byte{0x80}, "bad field tag"},
		"bad varint":     {[]byte{0x08, 0x80}, "bad varint"},
		"bad length":     {[]byte{0x0a, 0x05, 1}, "bad length"},
		"bad fixed":      {[]byte{0x09, 1, 2}, "bad fixed-size field"},
		"bad wire":       {[]byte{0x0b}, "unknown wire type 3"},
		"bad type":       {pbBytes(1, []byte{0x80}), "bad field tag"},
		"bad sample":     {pbBytes(2, []byte{0x80}), "bad field tag"},
		"bad label":      {sample(nil, pbBytes(3, []byte{0x80})), "bad field tag"},
		"bad packed":     {sample(pbBytes(2, []byte{0x80})), "bad packed value"},
		"no cpu":         {join(pbBytes(1, pbVarint(1, 1)), strs), "no cpu sample type"},
		"type string":    {join(pbBytes(1, pbVarint(1, 99)), strs), "string 99 of 6"},
		"short sample":   {join(types, sample(pbVarint(2, 1)), strs), "a sample lacks the cpu value"},
		"label key":      {join(types, sample(packed(1, 2, 3), label(99, 4)), strs), "string 99 of 6"},
		"label value":    {join(types, sample(packed(1, 2, 3), label(3, 99)), strs), "string 99 of 6"},
		"truncated gzip": {nil, "unexpected EOF"},
	} {
		data := gz(t, tc.raw)
		if tc.raw == nil {
			data = data[:len(data)-6]
		}
		if _, err := cpuByLabel(data, "side", "none"); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", name, err, tc.want)
		}
	}
	if _, err := cpuByLabel([]byte("not gzip"), "side", "none"); err == nil {
		t.Error("not gzip: no error")
	}
}
