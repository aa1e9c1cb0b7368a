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
	// LLCBytes is the last-level cache, shared by the cores (the L3): a
	// tensor that takes at most a quarter of it is re-read from there,
	// not from memory.
	LLCBytes int64
	// LLCBytesPerSec is the bandwidth such re-reads stream at; 0 means
	// BytesPerSec (no faster level known).
	LLCBytesPerSec float64
	// RereadBytesPerSec is the bandwidth at which a loop re-reads a
	// tensor past the last-level cache: a contraction's schedule walks
	// such an operand in strips of a few cache lines per row, which
	// streams slower than a copy; 0 means BytesPerSec.
	RereadBytesPerSec float64
	// AccumulatorOps is what a reduction member of a fused group pays per
	// point, in OpsPerSec's units, for keeping its partial sums in memory
	// (a member alone keeps them in registers); 0 means
	// DefaultAccumulatorOps.
	AccumulatorOps int64
}

// DefaultMachine is used when no measurement is given: a modest CPU.
var DefaultMachine = Machine{BytesPerSec: 2e10, OpsPerSec: 1e11, NestSec: 5e-6, CallOps: DefaultCallOps, AccumulatorOps: DefaultAccumulatorOps,
	CacheBytes: DefaultCacheBytes, LLCBytes: DefaultLLCBytes, LLCBytesPerSec: 8e10}

// DefaultCallOps is Machine.CallOps when none is known.
const DefaultCallOps = 60

// DefaultCacheBytes is Machine.CacheBytes when none is known.
const DefaultCacheBytes = 1 << 20

// DefaultAccumulatorOps is Machine.AccumulatorOps when none is known: a
// load and a store.
const DefaultAccumulatorOps = 2

// DefaultLLCBytes is Machine.LLCBytes when none is known.
const DefaultLLCBytes = 16 << 20

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
	if m.AccumulatorOps <= 0 {
		m.AccumulatorOps = DefaultAccumulatorOps
	}
	if m.LLCBytes <= 0 {
		m.LLCBytes = DefaultLLCBytes
	}
	if m.RereadBytesPerSec <= 0 {
		m.RereadBytesPerSec = m.BytesPerSec
	}
	if m.LLCBytesPerSec < m.BytesPerSec {
		m.LLCBytesPerSec = m.BytesPerSec
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
