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
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	type sample struct {
		values []int64
		labels [][2]int64 // key, str: string table indexes
	}
	var types []int64 // sample_type[i].type, string table indexes
	var samples []sample
	var strs []string
	err = protoFields(raw, func(num int, v uint64, data []byte) error {
		switch num {
		case 1: // sample_type: ValueType
			var typ int64
			err := protoFields(data, func(num int, v uint64, _ []byte) error {
				if num == 1 {
					typ = int64(v)
				}
				return nil
			})
			types = append(types, typ)
			return err
		case 2: // sample
			var s sample
			err := protoFields(data, func(num int, v uint64, data []byte) error {
				switch {
				case num == 2 && data == nil: // value, one by one
					s.values = append(s.values, int64(v))
				case num == 2: // value, packed
					for len(data) > 0 {
						x, n := binary.Uvarint(data)
						if n <= 0 {
							return errors.New("bad packed value")
						}
						s.values = append(s.values, int64(x))
						data = data[n:]
					}
				case num == 3: // label
					var l [2]int64
					err := protoFields(data, func(num int, v uint64, _ []byte) error {
						if num == 1 || num == 2 {
							l[num-1] = int64(v)
						}
						return nil
					})
					s.labels = append(s.labels, l)
					return err
				}
				return nil
			})
			samples = append(samples, s)
			return err
		case 6: // string_table
			strs = append(strs, string(data))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	str := func(i int64) (string, error) {
		if i < 0 || i >= int64(len(strs)) {
			return "", fmt.Errorf("cpu profile: string %d of %d", i, len(strs))
		}
		return strs[i], nil
	}
	cpu := -1
	for i, t := range types {
		if s, err := str(t); err != nil {
			return nil, err
		} else if s == "cpu" {
			cpu = i
		}
	}
	if cpu < 0 {
		return nil, errors.New("cpu profile: no cpu sample type")
	}
	out := map[string]int64{}
	for _, s := range samples {
		if cpu >= len(s.values) {
			return nil, errors.New("cpu profile: a sample lacks the cpu value")
		}
		side := none
		for _, l := range s.labels {
			k, err := str(l[0])
			if err != nil {
				return nil, err
			}
			if k == key {
				if side, err = str(l[1]); err != nil {
					return nil, err
				}
			}
		}
		out[side] += s.values[cpu]
	}
	return out, nil
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
