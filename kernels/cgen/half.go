package cgen

import (
	"fmt"
	"strings"

	"github.com/pkg/errors"

	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/loops"
)

// halfTypes are the storage types of the 16-bit dtypes in CUDA C: their
// bits, in an unsigned short, so that no CUDA header is needed.
var halfTypes = map[ir.DType]string{ir.Float16: "nf_half", ir.BFloat16: "nf_bf16"}

// ElemType is the C type of a CUDA kernel's tensor elements of dtype d
// ("" for an unsupported dtype).
func ElemType(d ir.DType) string {
	if t, ok := halfTypes[d]; ok {
		return t
	}
	if t, ok := cudaIntTypes[d]; ok {
		return t
	}
	return map[ir.DType]string{ir.Float32: "float", ir.Float64: "double"}[d]
}

// halfText is the storage type of a 16-bit kernel and its conversions:
// nf_ld (to float), nf_st (from float, rounding to nearest even) and
// nf_atomic_add (a compare-and-swap loop on the aligned 32-bit word that
// holds the element). On the device float16 converts with the PTX cvt
// instructions; the portable branch, bit arithmetic, is what the host
// emulator and C kernels run (C kernels: load, compute and accumulate in
// float32, round once per stored element, as on CUDA).
func (r *renderer) halfText() string {
	if r.stype == "" {
		return ""
	}
	// nf_ld that only the portable nf_mma calls is left out on sm_80 and
	// later, where NVRTC would warn that nothing references it.
	ldForMMA := r.used["nf_mma"] && !r.used["nf_ld"] && !r.used["nf_atomic_add"]
	if r.used["nf_atomic_add"] || r.used["nf_mma"] {
		r.used["nf_ld"], r.used["nf_st"] = true, true
	}
	var b strings.Builder
	fmt.Fprintf(&b, "typedef unsigned short %s;\n\n", r.stype)
	conv := bf16Conversions
	if r.spec.DType == ir.Float16 {
		conv = f16Conversions
	}
	for i, name := range []string{"nf_ld", "nf_st", "nf_atomic_add"} {
		if !r.used[name] {
			continue
		}
		text := strings.ReplaceAll([]string{conv[0], conv[1], atomicAdd16}[i], "$S", r.stype)
		if !r.cuda {
			// C: the portable conversions, inlined into the lane loops.
			text = strings.ReplaceAll(text, "static __device__ __forceinline__", "static inline")
		}
		if name == "nf_ld" && ldForMMA {
			text = "#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ < 800\n" + text + "#endif\n"
		}
		b.WriteString(text)
	}
	if r.used["nf_mma"] {
		b.WriteString(mmaText(r.spec.DType))
	}
	return b.String()
}

// f16Conversions and bf16Conversions are nf_ld and nf_st of a type.
var f16Conversions = [2]string{`static __device__ __forceinline__ float nf_ld(nf_half h)
{
#ifdef __CUDA_ARCH__
	float f;
	asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
	return f;
#else
	unsigned int s = (unsigned int)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
	union { unsigned int u; float f; } x;
	if (e == 0) {
		float v = (float)m * 5.9604644775390625e-8f;
		return s ? -v : v;
	}
	x.u = s | (e == 0x1fu ? 0x7f800000u | m << 13 : (e + 112u) << 23 | m << 13);
	return x.f;
#endif
}

`, `#ifndef __CUDA_ARCH__
static inline unsigned int nf_round_shift(unsigned int x, unsigned int s)
{
	unsigned int q = x >> s, rem = x & ((1u << s) - 1u), half = 1u << (s - 1u);
	return q + (rem > half || (rem == half && (q & 1u)));
}
#endif

static __device__ __forceinline__ nf_half nf_st(float f)
{
#ifdef __CUDA_ARCH__
	nf_half h;
	asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
	return h;
#else
	union { float f; unsigned int u; } x = {f};
	unsigned int s = (x.u >> 16) & 0x8000u, mant = x.u & 0x7fffffu;
	int exp = (int)((x.u >> 23) & 0xffu), e = exp - 112;
	if (exp == 0xff) return (nf_half)(s | (mant ? 0x7e00u : 0x7c00u));
	if (e >= 0x1f) return (nf_half)(s | 0x7c00u);
	if (e <= 0) return (nf_half)(14 - e > 24 ? s : s | nf_round_shift(mant | 0x800000u, (unsigned int)(14 - e)));
	return (nf_half)(s | nf_round_shift((unsigned int)e << 23 | mant, 13));
#endif
}

`}

var bf16Conversions = [2]string{`static __device__ __forceinline__ float nf_ld(nf_bf16 h)
{
	union { unsigned int u; float f; } x = {(unsigned int)h << 16};
	return x.f;
}

`, `static __device__ __forceinline__ nf_bf16 nf_st(float f)
{
	union { float f; unsigned int u; } x = {f};
	if ((x.u & 0x7fffffffu) > 0x7f800000u) return (nf_bf16)((x.u >> 16) | 0x40u);
	return (nf_bf16)((x.u + 0x7fffu + ((x.u >> 16) & 1u)) >> 16);
}

`}

const atomicAdd16 = `static __device__ __forceinline__ void nf_atomic_add($S *p, float v)
{
	unsigned int *w = (unsigned int *)((unsigned long long)p & ~3ull);
	unsigned int sh = ((unsigned long long)p & 2ull) ? 16u : 0u;
	unsigned int old = *w, seen;
	do {
		seen = old;
		$S cur = ($S)(seen >> sh);
		unsigned int next = (seen & ~(0xffffu << sh)) | ((unsigned int)nf_st(nf_ld(cur) + v) << sh);
		old = atomicCAS(w, seen, next);
	} while (old != seen);
}

`

// store16 renders a store of val into dst, an element of a 16-bit
// tensor: the combination is computed in float and rounded once.
func (r *renderer) store16(s *loops.Store, dst string, value cexpr, depth int) error {
	val := value.s.String()
	if s.Atomic {
		if s.Op != ir.Sum {
			return errors.Errorf("atomic %s store: only CUDA renders atomic adds", s.Op)
		}
		r.used["nf_atomic_add"] = true
		r.line(depth, "nf_atomic_add(&%s, %s);", dst, val)
		return nil
	}
	old := "nf_ld(" + dst + ")"
	var v string
	switch s.Op {
	case ir.Assign:
		v = val
	case ir.Sum:
		v = old + " + " + value.at(precAdd+1).String() // Y + (a - b), not (Y + a) - b
	case ir.Prod:
		v = old + " * (" + val + ")"
	case ir.Max, ir.Min:
		h := "nf_" + map[ir.ReduceOp]string{ir.Max: "max", ir.Min: "min"}[s.Op]
		r.used[h] = true
		v = h + "(" + old + ", " + val + ")"
	default:
		return errors.Errorf("unknown store operator %d", int(s.Op))
	}
	r.used["nf_ld"] = r.used["nf_ld"] || s.Op != ir.Assign
	r.used["nf_st"] = true
	r.line(depth, "%s = nf_st(%s);", dst, v)
	return nil
}
