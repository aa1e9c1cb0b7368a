package fuse

import "fmt"

// Machine holds the rates the reward weighs its terms with (the paper's
// Pd, Pc and L), measured once per machine by small benchmarks (the
// caller's; torchbridge keeps them in the cache directory) or
// DefaultMachine.
type Machine struct {
	// BytesPerSec is the memory bandwidth a loop nest streams at (Pd).
	BytesPerSec float64
	// OpsPerSec is the arithmetic rate, in cost's units (additions) per
	// second (Pc).
	OpsPerSec float64
	// NestSec is the fixed cost of one loop nest: a parallel region on the
	// CPU, a launch on the GPU (L).
	NestSec float64
	// CallOps is the cost of one math function call (exp, tanh, ...)
	// in OpsPerSec's units (Cost); 0 means DefaultCallOps.
	CallOps int64
	// CacheBytes is the cache a thread's loops reuse data in (the L2 of
	// one core): a loop re-reads from memory what its body touches
	// beyond it (fuse-group's traffic estimate).
	CacheBytes int64
}

// DefaultMachine is used when no measurement is given: a modest CPU.
var DefaultMachine = Machine{BytesPerSec: 2e10, OpsPerSec: 1e11, NestSec: 5e-6, CallOps: DefaultCallOps, CacheBytes: DefaultCacheBytes}

// DefaultCallOps is Machine.CallOps when none is known.
const DefaultCallOps = 60

// DefaultCacheBytes is Machine.CacheBytes when none is known.
const DefaultCacheBytes = 1 << 20

func (m Machine) orDefault() Machine {
	if m.BytesPerSec <= 0 || m.OpsPerSec <= 0 || m.NestSec < 0 {
		return DefaultMachine
	}
	if m.CacheBytes <= 0 {
		m.CacheBytes = DefaultCacheBytes
	}
	if m.CallOps <= 0 {
		m.CallOps = DefaultCallOps
	}
	return m
}

// Reward is the paper's R = ΔT/Pd + ΔC/Pc + ΔK·L for one transformation:
// the seconds it saves per run from the bytes of memory traffic it saves
// (ΔT), the arithmetic it saves (ΔC, negative when it recomputes) and the
// loop nests it saves (ΔK, negative when it adds some). A pass applies a
// transformation only when R > 0, the best first.
type Reward struct {
	Bytes, Ops, Nests int64
	R                 float64
}

func (m Machine) reward(bytes, ops, nests int64) Reward {
	m = m.orDefault()
	return Reward{Bytes: bytes, Ops: ops, Nests: nests,
		R: float64(bytes)/m.BytesPerSec + float64(ops)/m.OpsPerSec + float64(nests)*m.NestSec}
}

// String prints the reward and its terms: "R = +3.1us (traffic +96KiB,
// arithmetic +0, nests +1)".
func (r Reward) String() string {
	return fmt.Sprintf("R = %s (traffic %s, arithmetic %+d, nests %+d)", seconds(r.R), bytesText(r.Bytes), r.Ops, r.Nests)
}

func seconds(s float64) string {
	switch a := max(s, -s); {
	case a >= 1e-3:
		return fmt.Sprintf("%+.3gms", s*1e3)
	case a >= 1e-6:
		return fmt.Sprintf("%+.3gus", s*1e6)
	}
	return fmt.Sprintf("%+.3gns", s*1e9)
}

func bytesText(b int64) string {
	a := max(b, -b)
	switch {
	case a >= 1<<20:
		return fmt.Sprintf("%+.1fMiB", float64(b)/(1<<20))
	case a >= 1<<10:
		return fmt.Sprintf("%+.1fKiB", float64(b)/(1<<10))
	}
	return fmt.Sprintf("%+dB", b)
}
