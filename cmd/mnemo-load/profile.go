package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"runtime/pprof"
)

// The fakes run in the load tool's own process, so the process's CPU time
// includes theirs. Their goroutines carry a pprof label, sideKey, and a CPU
// profile taken during the load tells how much of the CPU time was spent
// under each label: goroutines inherit the labels of the goroutine that
// starts them, so everything a fake's HTTP server does (its listener, every
// connection and request, the gateway's writers) is counted as the fake's.
// Unlabelled samples are mnemo's: its goroutines, and the Go runtime's own
// (background GC, scheduler), whoever caused that work.
const sideKey = "side"

// Sides of the process, as labelled.
const (
	sideMnemo       = "mnemo" // unlabelled samples
	sideFakeModel   = "fake-model"
	sideFakeDiscord = "fake-discord"
	sideTool        = "load-tool" // the heap sampler
)

// labelled returns ctx with the goroutine label side=side.
func labelled(ctx context.Context, side string) context.Context {
	return pprof.WithLabels(ctx, pprof.Labels(sideKey, side))
}

// asSide runs f with the calling goroutine labelled side; goroutines f
// starts keep the label.
func asSide(side string, f func()) {
	pprof.Do(context.Background(), pprof.Labels(sideKey, side), func(context.Context) { f() })
}

// profiler is a CPU profile running while the load runs.
type profiler struct {
	buf bytes.Buffer
	on  bool
}

// startProfile starts a CPU profile. When one is running already (another
// load in this process, go test -cpuprofile), nothing is profiled and stop
// returns nil.
func startProfile() *profiler {
	p := &profiler{}
	p.on = pprof.StartCPUProfile(&p.buf) == nil
	return p
}

// stop ends the profile and returns the CPU nanoseconds sampled per side
// (unlabelled samples under sideMnemo), or nil when there was no profile.
func (p *profiler) stop() (map[string]int64, error) {
	if !p.on {
		return nil, nil
	}
	pprof.StopCPUProfile()
	p.on = false
	return cpuByLabel(p.buf.Bytes(), sideKey, sideMnemo)
}

// cpuByLabel reads a CPU profile (gzipped profile.proto, as runtime/pprof
// writes it) and sums the CPU nanoseconds of its samples by the value of
// label key; samples without it go under none.
func cpuByLabel(gz []byte, key, none string) (map[string]int64, error) {
	prof, err := readCPUProfile(gz)
	if err != nil {
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	cpu, err := prof.cpuIndex()
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for _, s := range prof.samples {
		if cpu >= len(s.values) {
			return nil, errors.New("cpu profile: a sample lacks the cpu value")
		}
		side, err := prof.labelValue(s, key, none)
		if err != nil {
			return nil, err
		}
		out[side] += s.values[cpu]
	}
	return out, nil
}

// cpuProfile is what cpuByLabel reads of a profile.proto: the sample
// types, the samples and the string table the others index.
type cpuProfile struct {
	types   []int64 // sample_type[i].type, string table indexes
	samples []profileSample
	strs    []string
}

// profileSample is one sample: a value per sample type, and its labels.
type profileSample struct {
	values []int64
	labels [][2]int64 // key, str: string table indexes
}

// readCPUProfile decompresses and decodes a profile, keeping the fields
// cpuByLabel needs.
func readCPUProfile(gz []byte) (*cpuProfile, error) {
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return nil, err
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		return nil, err
	}
	p := &cpuProfile{}
	err = protoFields(raw, func(num int, v uint64, data []byte) error {
		switch num {
		case 1: // sample_type: ValueType
			typ, err := readValueType(data)
			p.types = append(p.types, typ)
			return err
		case 2: // sample
			s, err := readSample(data)
			p.samples = append(p.samples, s)
			return err
		case 6: // string_table
			p.strs = append(p.strs, string(data))
		}
		return nil
	})
	return p, err
}

// readValueType returns a ValueType's type (a string table index).
func readValueType(data []byte) (int64, error) {
	var typ int64
	err := protoFields(data, func(num int, v uint64, _ []byte) error {
		if num == 1 {
			typ = int64(v)
		}
		return nil
	})
	return typ, err
}

// readSample decodes a Sample's values (one by one or packed) and labels.
func readSample(data []byte) (profileSample, error) {
	var s profileSample
	err := protoFields(data, func(num int, v uint64, data []byte) error {
		var err error
		switch {
		case num == 2 && data == nil: // value, one by one
			s.values = append(s.values, int64(v))
		case num == 2: // value, packed
			s.values, err = appendPacked(s.values, data)
		case num == 3: // label
			var l [2]int64
			l, err = readLabel(data)
			s.labels = append(s.labels, l)
		}
		return err
	})
	return s, err
}

// appendPacked appends the varints of a packed repeated field to vs.
func appendPacked(vs []int64, data []byte) ([]int64, error) {
	for len(data) > 0 {
		x, n := binary.Uvarint(data)
		if n <= 0 {
			return vs, errors.New("bad packed value")
		}
		vs = append(vs, int64(x))
		data = data[n:]
	}
	return vs, nil
}

// readLabel returns a Label's key and str (string table indexes).
func readLabel(data []byte) ([2]int64, error) {
	var l [2]int64
	err := protoFields(data, func(num int, v uint64, _ []byte) error {
		if num == 1 || num == 2 {
			l[num-1] = int64(v)
		}
		return nil
	})
	return l, err
}

// str is string i of the string table.
func (p *cpuProfile) str(i int64) (string, error) {
	if i < 0 || i >= int64(len(p.strs)) {
		return "", fmt.Errorf("cpu profile: string %d of %d", i, len(p.strs))
	}
	return p.strs[i], nil
}

// cpuIndex is the index of the "cpu" sample type (the last one, should
// there be two) in every sample's values.
func (p *cpuProfile) cpuIndex() (int, error) {
	cpu := -1
	for i, t := range p.types {
		s, err := p.str(t)
		if err != nil {
			return 0, err
		}
		if s == "cpu" {
			cpu = i
		}
	}
	if cpu < 0 {
		return 0, errors.New("cpu profile: no cpu sample type")
	}
	return cpu, nil
}

// labelValue is the value of sample s's label key (the last one, should
// there be two), or none when it has none.
func (p *cpuProfile) labelValue(s profileSample, key, none string) (string, error) {
	side := none
	for _, l := range s.labels {
		k, err := p.str(l[0])
		if err != nil {
			return "", err
		}
		if k == key {
			if side, err = p.str(l[1]); err != nil {
				return "", err
			}
		}
	}
	return side, nil
}

// protoFields calls f for every field of a protobuf message: a varint
// field with its value and nil data, a length-delimited one with its bytes
// (non-nil). Fixed-size fields are skipped.
func protoFields(b []byte, f func(num int, v uint64, data []byte) error) error {
	for len(b) > 0 {
		tag, n := binary.Uvarint(b)
		if n <= 0 {
			return errors.New("bad field tag")
		}
		b = b[n:]
		num, wire := int(tag>>3), tag&7
		switch wire {
		case 0:
			v, n := binary.Uvarint(b)
			if n <= 0 {
				return errors.New("bad varint")
			}
			b = b[n:]
			if err := f(num, v, nil); err != nil {
				return err
			}
		case 2:
			l, n := binary.Uvarint(b)
			if n <= 0 || l > uint64(len(b)-n) {
				return errors.New("bad length")
			}
			data := b[n : n+int(l) : n+int(l)]
			b = b[n+int(l):]
			if err := f(num, 0, data); err != nil {
				return err
			}
		case 1, 5:
			size := 8
			if wire == 5 {
				size = 4
			}
			if len(b) < size {
				return errors.New("bad fixed-size field")
			}
			b = b[size:]
		default:
			return fmt.Errorf("unknown wire type %d", wire)
		}
	}
	return nil
}
