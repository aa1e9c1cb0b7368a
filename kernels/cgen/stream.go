package cgen

import (
	"fmt"
	"strings"

	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/loops"
)

// Streaming stores. A lane loop whose body is one assignment of a whole
// 64-byte vector of a large tensor (StreamMinBytes and up), contiguous in
// the lane, is rendered with a streaming (non-temporal) store where the
// compiler targets AVX-512 and the address is 64-byte aligned (checked at
// run time; the plain loop otherwise): the line is written to memory
// without first being read into the cache. A register-tiled weight
// gradient, dW[g, k] += dY[b, g] * X[b, k] over a small batch, writes
// each element of a 16 MB dW once from its accumulators; with plain stores
// every line is read from memory before it is overwritten, a third of the
// nest's traffic (MI-LSTM's cell gradient: 9.0-9.2 ms, with the stream
// 5.3-7.1, on the 2-core Xeon of bench/results). GCC ignores OpenMP's
// nontemporal clause, so the store is an intrinsic.
//
// Each thread fences its streaming stores (sfence) before the parallel
// loop's closing barrier, so that whatever reads the tensor next, on any
// thread, reads what they wrote; a nest outside a parallel loop is fenced
// at the kernel's end.

// StreamMinBytes is the smallest tensor stored with streaming stores; 0
// turns them off. A smaller tensor is likely to be read again from the
// cache before it is evicted, which a streaming store would prevent.
var StreamMinBytes int64 = 4 << 20

// streamIntrinsics are the AVX-512 store and load of a 64-byte vector,
// by C type, as streamPrelude defines them.
var streamIntrinsics = map[string][2]string{
	"float":  {"nf_stream_ps", "nf_load_ps"},
	"double": {"nf_stream_pd", "nf_load_pd"},
}

// streamPrelude defines the streaming stores' intrinsics. GCC spends 0.12 s
// parsing immintrin.h, about as long as it compiles a small kernel (0.30 s
// against 0.17 s for the MI-LSTM cell's gradient, measured), so under GCC
// they are its builtins, which is all immintrin.h's functions are; any
// other compiler includes the header. The vector types may alias their
// elements, as __m512 does: nf_load_* reads a float or double array.
const streamPrelude = `#if defined(__AVX512F__)
#if defined(__GNUC__) && !defined(__clang__)
typedef float nf_v16sf __attribute__((vector_size(64), __may_alias__));
typedef double nf_v8df __attribute__((vector_size(64), __may_alias__));
#define nf_load_ps(p) (*(const nf_v16sf *)(p))
#define nf_load_pd(p) (*(const nf_v8df *)(p))
#define nf_stream_ps(p, v) __builtin_ia32_movntps512((p), (v))
#define nf_stream_pd(p, v) __builtin_ia32_movntpd512((p), (v))
#define nf_sfence() __builtin_ia32_sfence()
#else
#include <immintrin.h>
#define nf_load_ps _mm512_load_ps
#define nf_load_pd _mm512_load_pd
#define nf_stream_ps _mm512_stream_ps
#define nf_stream_pd _mm512_stream_pd
#define nf_sfence _mm_sfence
#endif
#endif
`

// streamable returns the store of lane loop l when l is rendered with a
// streaming store (see above): an output the kernel never reads back
// (rereadTensors).
func (r *renderer) streamable(l *loops.Loop) (*loops.Store, bool) {
	if r.cuda || r.sized || !l.Vector || l.Parallel || r.collapsing > 0 || StreamMinBytes <= 0 || len(r.masks) > 0 || r.stype != "" || len(l.Body) != 1 {
		return nil, false
	}
	s, ok := l.Body[0].(*loops.Store)
	if !ok || s.Op != ir.Assign || s.Atomic || s.Vec > 1 || loops.IsLocal(s.Dst.Tensor) {
		return nil, false
	}
	t := r.tensors[s.Dst.Tensor]
	if _, ok := streamIntrinsics[r.ctype]; !ok || t == nil || t.Role != ir.RoleOutput || r.reread[t.Name] || r.elemType(t) != r.ctype || len(s.Dst.Indices) != len(t.Shape) {
		return nil, false
	}
	size := int64(r.spec.DType.Size())
	if t.Elems()*size < StreamMinBytes || l.Extent*size != 64 {
		return nil, false
	}
	step, ok := loops.Coefficient(loops.FlatIndex(s.Dst, t.Shape), l.Var)
	return s, ok && step == 1
}

// streamLoop renders lane loop l, whose one store is s, with a streaming
// store where the address allows (see above); v is the loop variable's C
// name.
func (r *renderer) streamLoop(l *loops.Loop, s *loops.Store, v string, depth int) error {
	first := &ir.Access{Tensor: s.Dst.Tensor, Indices: make([]ir.Expr, len(s.Dst.Indices))}
	for i, x := range s.Dst.Indices {
		first.Indices[i] = ir.SubstIndex(x, map[string]ir.Expr{l.Var: loops.Lit(0)})
	}
	at, err := r.ref(first)
	if err != nil {
		return err
	}
	r.vars[l.Var] = l.Extent
	r.lanes++
	dst, err := r.ref(s.Dst)
	var val cexpr
	if err == nil {
		val, err = r.value(s.Value)
	}
	r.lanes--
	delete(r.vars, l.Var)
	if err != nil {
		return err
	}
	in := streamIntrinsics[r.ctype]
	r.streamed, r.anyStream = true, true
	r.line(depth, "{")
	r.line(depth+1, "%s *nf_sp = &%s;", r.ctype, at.s)
	r.line(0, "#if defined(__AVX512F__)")
	r.line(depth+1, "if (((uintptr_t)nf_sp & 63) == 0) {")
	r.line(depth+2, "%s nf_sv[%d] __attribute__((aligned(64)));", r.ctype, l.Extent)
	r.line(depth+2, "#pragma omp simd")
	r.line(depth+2, "for (%s %s = 0; %s < %d; %s++) {", r.itype, v, v, l.Extent, v)
	r.line(depth+3, "nf_sv[%s] = %s;", v, val.s)
	r.line(depth+2, "}")
	r.line(depth+2, "%s(nf_sp, %s(nf_sv));", in[0], in[1])
	r.line(depth+1, "} else")
	r.line(0, "#endif")
	r.line(depth+1, "{")
	r.line(depth+2, "#pragma omp simd")
	r.line(depth+2, "for (%s %s = 0; %s < %d; %s++) {", r.itype, v, v, l.Extent, v)
	r.line(depth+3, "%s = %s;", dst.s, val.s)
	r.line(depth+2, "}")
	r.line(depth+1, "}")
	r.line(depth, "}")
	return nil
}

// fenceStreams rewrites the rendering of a parallel loop (text, opened at
// depth) whose body streamed: the loop becomes a worksharing loop without
// its barrier inside a parallel region, each thread fences its streaming
// stores after its share, and the region's end is the barrier.
func fenceStreams(text string, depth int) string {
	pragma, rest, _ := strings.Cut(text, "\n")
	indent := strings.Repeat("\t", depth)
	clauses := strings.TrimPrefix(strings.TrimSpace(pragma), "#pragma omp parallel for")
	clauses = strings.Replace(clauses, " num_threads(nf_nt)", "", 1)
	simd := ""
	if strings.HasPrefix(clauses, " simd") {
		simd, clauses = " simd", strings.TrimPrefix(clauses, " simd")
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s#pragma omp parallel num_threads(nf_nt)\n%s{\n", indent, indent)
	fmt.Fprintf(&b, "%s#pragma omp for%s%s nowait\n", indent, simd, clauses)
	b.WriteString(rest)
	fmt.Fprintf(&b, "#if defined(__AVX512F__)\n%snf_sfence();\n#endif\n%s}\n", indent, indent)
	return b.String()
}

// rereadTensors are the tensors fn reads, or combines into (a store other
// than an assignment reads the element first), anywhere. A streaming
// store of one would send to memory what the kernel then reads back from
// there: a fused group's statement reading the one before it, an output
// set to zero before its sum, a sum combined into its output.
func rereadTensors(fn *loops.Func) map[string]bool {
	out := map[string]bool{}
	reads := func(e ir.Expr) {
		ir.Walk(e, func(x ir.Expr) bool {
			if a, ok := x.(*ir.Access); ok && !loops.IsLocal(a.Tensor) {
				out[a.Tensor] = true
			}
			return true
		})
	}
	var walk func(nodes []loops.Node)
	walk = func(nodes []loops.Node) {
		for _, n := range nodes {
			switch n := n.(type) {
			case *loops.Loop:
				walk(n.Body)
			case *loops.Block:
				walk(n.Body)
			case *loops.If:
				reads(n.Cond)
				walk(n.Body)
			case *loops.Store:
				reads(n.Value)
				for _, x := range n.Dst.Indices {
					reads(x)
				}
				if n.Op != ir.Assign {
					out[n.Dst.Tensor] = true
				}
			case *loops.Prefetch:
				out[n.Addr.Tensor] = true
			}
		}
	}
	for _, nest := range fn.Nests {
		walk(nest.Body)
	}
	return out
}
