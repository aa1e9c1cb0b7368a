package cgen

import (
	"fmt"
	"strings"

	"github.com/pkg/errors"

	"github.com/neoflow/neoflow/core/bounds"
	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/loops"
)

// Render returns the C source of fn as one function named symbol.
func Render(fn *loops.Func, symbol string) (string, error) {
	return render(fn, symbol, false)
}

// RenderProfiled is Render with per-statement timing: the kernel takes one
// more buffer, bufs[len(fn.Spec.Tensors)], a double array with one entry
// per statement of fn.Spec, and adds to entry i the seconds
// (CLOCK_MONOTONIC) that the nest of statement i took; a fused group's
// nest counts for its first statement, the others' entries stay 0. The caller zeroes the array, or takes
// differences between calls. The nests compute exactly what Render's do.
func RenderProfiled(fn *loops.Func, symbol string) (string, error) {
	return render(fn, symbol, true)
}

// profileBuffer is the name of the profiled kernel's timing array.
const profileBuffer = "nf_prof"

func render(fn *loops.Func, symbol string, profile bool) (string, error) {
	r, text, err := renderFunc(fn, symbol, profile)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	r.headerComment(&b, profile, len(fn.Spec.Stmts))
	r.prelude(&b, profile)
	b.WriteString(text)
	return b.String(), nil
}

// RenderBatch renders fns, all of one dtype, into one C translation unit
// whose function i is named symbols[i], with one prelude (the includes,
// declarations and helpers of them all). One C compiler run of the batch
// takes a fraction of what a run per kernel takes: most of a small
// kernel's compile is the compiler's start and the headers.
//
// Profiled kernels (RenderProfiled) render with profile set.
func RenderBatch(fns []*loops.Func, symbols []string, profile bool) (string, error) {
	if len(fns) == 0 || len(fns) != len(symbols) {
		return "", errors.Errorf("cgen: a batch of %d functions and %d symbols", len(fns), len(symbols))
	}
	var all *renderer
	var comments, texts strings.Builder
	for i, fn := range fns {
		r, text, err := renderFunc(fn, symbols[i], profile)
		if err != nil {
			return "", err
		}
		if all == nil {
			all = r
		} else if r.spec.DType != all.spec.DType {
			return "", errors.Errorf("cgen: a batch of %v and %v kernels", all.spec.DType, r.spec.DType)
		}
		for name := range r.used {
			all.used[name] = true
		}
		all.anyStream = all.anyStream || r.anyStream
		r.headerComment(&comments, profile, len(fn.Spec.Stmts))
		texts.WriteString("\n" + text)
	}
	var b strings.Builder
	b.WriteString(comments.String())
	all.prelude(&b, profile)
	b.WriteString(texts.String())
	return b.String(), nil
}

// renderFunc renders fn as the function symbol, and returns it with its
// renderer, which knows the helpers and the prelude the function needs.
func renderFunc(fn *loops.Func, symbol string, profile bool) (*renderer, string, error) {
	r, err := newRenderer(fn, symbol, false)
	if err != nil {
		return nil, "", err
	}
	r.reread = rereadTensors(fn)
	var body strings.Builder
	r.b = &body
	for _, n := range fn.Nests {
		if profile {
			r.line(1, "clock_gettime(CLOCK_MONOTONIC, &nf_t0);")
		}
		if err := r.nest(n); err != nil {
			return nil, "", errors.Wrapf(err, "cgen: statement %d", n.Index)
		}
		if profile {
			r.line(1, "clock_gettime(CLOCK_MONOTONIC, &nf_t1);")
			r.line(1, "%s[%d] += (double)(nf_t1.tv_sec - nf_t0.tv_sec) + 1e-9 * (double)(nf_t1.tv_nsec - nf_t0.tv_nsec);", profileBuffer, n.Index)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "void %s(void **bufs, int64_t nthreads)\n{\n", symbol)
	for i, t := range fn.Spec.Tensors {
		name, err := tensorName(t.Name)
		if err != nil {
			return nil, "", errors.Wrap(err, "cgen")
		}
		ct := r.elemType(t)
		if t.Role == ir.RoleInput {
			fmt.Fprintf(&b, "\tconst %s *restrict %s = (const %s *)bufs[%d];\n", ct, name, ct, i)
		} else {
			fmt.Fprintf(&b, "\t%s *restrict %s = (%s *)bufs[%d];\n", ct, name, ct, i)
		}
	}
	r.sizesPrologue(&b)
	if profile {
		fmt.Fprintf(&b, "\tdouble *restrict %s = (double *)bufs[%d];\n", profileBuffer, len(fn.Spec.Tensors)+min(len(fn.Sizes), 1))
		b.WriteString("\tstruct timespec nf_t0, nf_t1;\n")
	}
	if r.parallel {
		b.WriteString("\tconst int nf_nt = nthreads < 1 ? 1 : nthreads > 4096 ? 4096 : (int)nthreads;\n")
	} else {
		b.WriteString("\t(void)nthreads;\n")
	}
	b.WriteString(body.String())
	if r.anyStream { // the streaming stores of nests outside a parallel loop (those inside fence there)
		b.WriteString("#if defined(__AVX512F__)\n\tnf_sfence();\n#endif\n")
	}
	b.WriteString("}\n")
	return r, b.String(), nil
}

// prelude writes what precedes the functions: the includes and
// definitions (header), the vector math declarations and the helpers
// that r's functions use.
func (r *renderer) prelude(b *strings.Builder, profile bool) {
	r.header(b, profile)
	b.WriteString(vectorMathDecls(r.ctype, r.suffix))
	b.WriteString(r.helperText())
	b.WriteString(r.halfText())
}

// newRenderer checks fn and symbol and starts the rendering of fn, as
// CUDA C when cuda is set.
func newRenderer(fn *loops.Func, symbol string, cuda bool) (*renderer, error) {
	if fn == nil || fn.Spec == nil || fn.Spec.Op == nil {
		return nil, errors.New("cgen: nil function")
	}
	if !IsIdent(symbol) {
		return nil, errors.Errorf("cgen: symbol %q is not a C identifier", symbol)
	}
	r := &renderer{
		cuda:    cuda,
		itype:   "int64_t",
		spec:    fn.Spec,
		used:    map[string]bool{},
		vars:    map[string]int64{},
		tensors: map[string]*ir.TensorDecl{},
		kinds:   ir.KindMemo{},
		reads:   map[ir.Expr]bool{},
	}
	if cuda {
		r.itype = "nf_i"
	}
	if len(fn.Sizes) > 0 {
		r.sized, r.sizes = true, fn.Sizes
		for _, s := range fn.Sizes {
			r.vars[s] = bounds.MaxSize + 1
		}
	}
	switch fn.Spec.DType {
	case ir.Float32:
		r.ctype, r.suffix = "float", "f"
	case ir.Float64:
		r.ctype, r.suffix = "double", ""
	case ir.Float16, ir.BFloat16:
		// Computed in float32; tensors hold the 16-bit type (half.go).
		r.ctype, r.suffix, r.stype = "float", "f", halfTypes[fn.Spec.DType]
	default:
		return nil, errors.Errorf("cgen: unsupported dtype %v", fn.Spec.DType)
	}
	for _, t := range fn.Spec.Tensors {
		r.tensors[t.Name] = t
	}
	return r, nil
}

// intTypes are the C types of integer tensors' elements, cudaIntTypes
// their CUDA C spelling (NVRTC has no <stdint.h>).
var (
	intTypes     = map[ir.DType]string{ir.Int32: "int32_t", ir.Int64: "int64_t", ir.Bool: "uint8_t"}
	cudaIntTypes = map[ir.DType]string{ir.Int32: "int", ir.Int64: "long long", ir.Bool: "unsigned char"}
)

// elemType is the C type of a kernel's pointer to t's elements: an
// integer type for an integer input, else the kernel's value type (for
// CUDA, the storage type: ElemType).
func (r *renderer) elemType(t *ir.TensorDecl) string {
	if r.cuda {
		return ElemType(r.spec.ElemType(t))
	}
	if c, ok := intTypes[t.DType]; ok {
		return c
	}
	if r.stype != "" {
		return r.stype // 16-bit storage, computed in r.ctype
	}
	return r.ctype
}

// stored16 reports whether the elements of tensor name are of a 16-bit
// type (r.stype), stored with nf_st: a tensor of a 16-bit kernel, not a
// local and not an integer tensor.
func (r *renderer) stored16(name string) bool {
	if r.stype == "" || loops.IsLocal(name) {
		return false
	}
	t := r.tensors[name]
	return t == nil || !t.DType.Integer()
}

// renderer holds the state of one Render call.
type renderer struct {
	// cuda renders CUDA C (cuda.go) rather than C with OpenMP.
	cuda bool
	// sized marks a kernel with symbolic extents, whose size variables
	// are sizes (sizes.go).
	sized bool
	sizes []string
	// work is the C expression of the current nest's work in a kernel with
	// symbolic extents (nestWork), "" otherwise.
	work string
	// itype is the C type of index arithmetic.
	itype         string
	spec          *ir.Spec
	ctype, suffix string
	// vectors is set once a vector copy is rendered.
	vectors bool
	// stype is the C type of a tensor's elements when it is not ctype:
	// a 16-bit type, loaded with nf_ld and stored with nf_st (CUDA).
	stype    string
	b        *strings.Builder
	used     map[string]bool  // helpers referenced
	vars     map[string]int64 // extents of the loop variables in scope
	tensors  map[string]*ir.TensorDecl
	parallel bool
	// block is the block size of the enclosing thread loop (CUDA), 0
	// outside one.
	block int64
	// lanes counts the lane loops in scope; masks are the conditions of
	// the wheres rendered as blends around the current expression,
	// outermost first (see blend).
	lanes int
	// collapsing counts the loops of a collapsed parallel group still to
	// open, the next one included: they must nest perfectly, with nothing
	// (not even NF_SCALAR) between them.
	collapsing int
	masks      []*code
	// streamed is set by a streaming store (stream.go) in the parallel
	// loop being rendered, anyStream by one anywhere in the kernel.
	streamed, anyStream bool
	// reread are the tensors the kernel reads or combines into
	// (rereadTensors): they are never streamed.
	reread map[string]bool
	// kinds and reads memoize ir.KindOf and readsTensor by node, so
	// rendering is linear in the size of the expressions.
	kinds ir.KindMemo
	reads map[ir.Expr]bool
}

// header writes the includes and definitions; headerComment the leading
// comment. A profiled kernel
// says so in the comment, which keeps its text (and so its cache key)
// apart from the plain kernel's, and asks for POSIX.1b before any include
// for clock_gettime, which -std=c11 hides otherwise.
func (r *renderer) header(b *strings.Builder, profile bool) {
	if profile {
		b.WriteString("#define _POSIX_C_SOURCE 199309L\n")
	}
	b.WriteString("#include <math.h>\n#include <stdint.h>\n")
	if profile {
		b.WriteString("#include <time.h>\n")
	}
	if r.anyStream {
		b.WriteString(streamPrelude)
	}
	b.WriteString(scalarLoopDef)
	b.WriteString("\n")
}

// scalarLoopDef defines NF_SCALAR, which opens the body of every loop the
// schedule did not make a lane loop (but the outer loops of a collapsed
// group, which must nest perfectly). The schedule decides what is
// vectorized ("#pragma omp simd" lane loops); an empty asm statement keeps
// GCC's own loop vectorizer off the other loops, loops around lane loops
// included, and costs no instruction.
// GCC 12.2's loop vectorizer miscompiled such loops: sums over
// X[i, N - 1 - j] (wrong at N = 5 and N = 2, also at -O2) and the gradient
// of a max (found by the property suite; kernels/miscompile_test.go).
const scalarLoopDef = "#define NF_SCALAR __asm__ volatile(\"\") /* the schedule keeps this loop scalar */\n"

// headerComment writes the comment that opens every kernel: the op, its
// dtype and its buffers.
func (r *renderer) headerComment(b *strings.Builder, profile bool, nests int) {
	op := r.spec.Op
	fmt.Fprintf(b, "// neoflow kernel %s, %s\n", commentSafe(op.DisplayName()), r.spec.DType)
	for _, line := range strings.Split(ir.Print(op), "\n") {
		fmt.Fprintf(b, "//   %s\n", commentSafe(line))
	}
	b.WriteString("// buffers:")
	for i, t := range r.spec.Tensors {
		sep := ","
		if i == 0 {
			sep = ""
		}
		fmt.Fprintf(b, "%s %s%s %s", sep, commentSafe(t.Name), shapeText(t), t.Role)
	}
	if profile {
		fmt.Fprintf(b, ", %s[%d] double seconds per statement", profileBuffer, nests)
	}
	b.WriteString("\n// Generated by neoflow; do not edit.\n\n")
}

func (r *renderer) line(depth int, format string, args ...any) {
	r.b.WriteString(strings.Repeat("\t", depth))
	fmt.Fprintf(r.b, format, args...)
	r.b.WriteByte('\n')
}

func (r *renderer) nest(n *loops.Nest) error {
	for _, st := range nestStmts(r.spec, n) {
		r.line(1, "// %s", commentSafe(ir.StmtString(st.Stmt)))
	}
	r.line(1, "{")
	r.work = r.nestWork(n)
	if err := r.nodes(n.Body, 2); err != nil {
		return err
	}
	r.line(1, "}")
	return nil
}

func (r *renderer) nodes(nodes []loops.Node, depth int) error {
	for _, n := range nodes {
		var err error
		switch n := n.(type) {
		case *loops.Loop:
			err = r.loop(n, depth)
		case *loops.Block:
			r.line(depth, "{ // %s", commentSafe(n.Comment))
			err = r.nodes(n.Body, depth+1)
			r.line(depth, "}")
		case *loops.Local:
			err = r.local(n, depth)
		case *loops.Store:
			err = r.store(n, depth)
		case *loops.If:
			err = r.ifNode(n, depth)
		case *loops.BlockCombine:
			err = r.blockCombine(n, depth)
		case *loops.Prefetch:
			err = r.prefetch(n, depth)
		case *loops.Sync:
			if !r.cuda {
				return errors.New("a barrier: only CUDA renders GPU tiled nests")
			}
			r.line(depth, "__syncthreads();")
		default:
			err = errors.Errorf("unknown loop node %T", n)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (r *renderer) loop(l *loops.Loop, depth int) error {
	v, err := varName(l.Var)
	if err != nil {
		return err
	}
	if _, dup := r.vars[l.Var]; dup {
		return errors.Errorf("loop variable %s shadows an enclosing loop", l.Var)
	}
	if s, ok := r.streamable(l); ok {
		return r.streamLoop(l, s, v, depth)
	}
	if l.Parallel && !r.cuda {
		return r.parallelLoop(l, v, depth)
	}
	return r.loopBody(l, v, depth)
}

// loopBody renders loop l, whose variable's C name is v.
func (r *renderer) loopBody(l *loops.Loop, v string, depth int) error {
	var err error
	switch {
	case l.Bind == loops.BindThread && r.cuda:
		return r.threads(l, depth)
	case l.Bind != loops.BindNone:
		return errors.Errorf("loop %s is bound to the GPU's grid: only CUDA renders it, and a block loop only at the top of a nest", l.Var)
	case r.cuda:
		// Parallel loops are rendered by the launch (cuda.go); any
		// other runs in one thread, lane loops unrolled.
		if l.Vector || l.Unroll > 1 {
			r.line(depth, "#pragma unroll")
		}
	case l.Parallel:
		r.parallel = true
		c := ""
		if l.Collapse > 1 {
			c = fmt.Sprintf(" collapse(%d)", l.Collapse)
		}
		simd := ""
		if l.Vector {
			simd = " simd" // the collapsed space is a lane loop
		}
		r.line(depth, "#pragma omp parallel for%s%s num_threads(nf_nt)%s schedule(static)", simd, r.parallelIf(), c)
	case l.Vector:
		r.line(depth, "#pragma omp simd")
	}
	if l.Unroll > 1 && !l.Parallel && !l.Vector && !r.cuda { // an omp loop takes no second pragma
		r.line(depth, "#pragma GCC unroll %d", l.Unroll)
	}
	r.line(depth, "for (%s %s = 0; %s < %s; %s++) {", r.itype, v, v, r.extent(l), v)
	owed, saved := r.collapsing, r.collapsing
	if l.Parallel && l.Collapse > 1 {
		owed = l.Collapse
	}
	r.collapsing = max(owed-1, 0)
	if !l.Vector && !r.cuda && owed <= 1 {
		r.line(depth+1, "NF_SCALAR;")
	}
	r.vars[l.Var] = l.Extent
	if l.Size != "" {
		r.vars[l.Var] = bounds.MaxSize
	}
	lane := l.Vector && !r.cuda // CUDA renders no blends
	if lane {
		r.lanes++
	}
	err = r.nodes(l.Body, depth+1)
	if lane {
		r.lanes--
	}
	delete(r.vars, l.Var)
	r.collapsing = saved
	r.line(depth, "}")
	return err
}

// parallelLoop renders a parallel loop of a C kernel (loopBody), fenced
// for the streaming stores in it (fenceStreams).
func (r *renderer) parallelLoop(l *loops.Loop, v string, depth int) error {
	out, saved := r.b, r.streamed
	var b strings.Builder
	r.b, r.streamed = &b, false
	err := r.loopBody(l, v, depth)
	text := b.String()
	if r.streamed {
		text = fenceStreams(text, depth)
	}
	r.b, r.streamed = out, saved || r.streamed
	r.b.WriteString(text)
	return err
}

func (r *renderer) local(l *loops.Local, depth int) error {
	name, err := localName(l.Name)
	if err != nil {
		return err
	}
	if l.Shared {
		if !r.cuda {
			return errors.Errorf("shared local %s: only CUDA renders GPU tiled nests", l.Name)
		}
		r.line(depth, "__shared__ __align__(16) %s %s[%d];", r.ctype, name, l.Len)
		return nil
	}
	if l.Len == 1 {
		r.line(depth, "%s %s;", r.ctype, name)
	} else if r.cuda {
		r.line(depth, "%s %s[%d];", r.ctype, name, l.Len)
	} else if l.Copy {
		// read through a restrict pointer (loops.Local.Copy says why)
		r.line(depth, "%s %s_buf[%d] __attribute__((aligned(64)));", r.ctype, name, l.Len)
		r.line(depth, "%s *restrict %s = %s_buf;", r.ctype, name, name)
	} else {
		// GCC 12.2 vectorizes an omp simd loop over a short local array with
		// 16-byte aligned stores (vmovdqa) it has not aligned the array for
		// (a 3-element double accumulator crashed the process): the array is
		// aligned for any vector width explicitly.
		r.line(depth, "%s %s[%d] __attribute__((aligned(64)));", r.ctype, name, l.Len)
	}
	return nil
}

func (r *renderer) store(s *loops.Store, depth int) error {
	if s.Vec > 1 {
		return r.vecStore(s, depth)
	}
	dst, err := r.ref(s.Dst)
	if err != nil {
		return err
	}
	val, err := r.value(s.Value)
	if err != nil {
		return err
	}
	if r.stored16(s.Dst.Tensor) {
		return r.store16(s, dst.s.String(), val, depth)
	}
	if s.Atomic {
		if !r.cuda || s.Op != ir.Sum {
			return errors.Errorf("atomic %s store: only CUDA renders atomic adds", s.Op)
		}
		r.line(depth, "atomicAdd(&%s, %s);", dst.s, val.s)
		return nil
	}
	switch s.Op {
	case ir.Assign:
		r.line(depth, "%s = %s;", dst.s, val.s)
	case ir.Sum:
		r.line(depth, "%s += %s;", dst.s, val.s)
	case ir.Prod:
		r.line(depth, "%s *= %s;", dst.s, val.s)
	case ir.Max:
		r.used["nf_max"] = true
		r.line(depth, "%s = nf_max(%s, %s);", dst.s, dst.s, val.s)
	case ir.Min:
		r.used["nf_min"] = true
		r.line(depth, "%s = nf_min(%s, %s);", dst.s, dst.s, val.s)
	default:
		return errors.Errorf("unknown store operator %d", int(s.Op))
	}
	return nil
}

// ifNode renders a guard: if (cond) { body }.
func (r *renderer) ifNode(n *loops.If, depth int) error {
	c, err := r.expr(n.Cond)
	if err != nil {
		return err
	}
	if c.kind != ir.KindBool {
		return errors.Errorf("if condition is not a bool: %s", ir.ExprString(n.Cond))
	}
	r.line(depth, "if (%s) {", c.s)
	err = r.nodes(n.Body, depth+1)
	r.line(depth, "}")
	return err
}

// nestStmts lists the statements nest n computes: its own, or a fused
// group's members.
func nestStmts(spec *ir.Spec, n *loops.Nest) []*ir.BoundStmt {
	if n.Members == nil {
		return []*ir.BoundStmt{n.Stmt}
	}
	out := make([]*ir.BoundStmt, len(n.Members))
	for k, i := range n.Members {
		out[k] = spec.Stmts[i]
	}
	return out
}

// cacheLine is the span of one prefetch.
const cacheLine = 64

// prefetch renders a Prefetch as one __builtin_prefetch per cache line of
// its span (at most 32 lines); CUDA kernels get none.
func (r *renderer) prefetch(p *loops.Prefetch, depth int) error {
	if r.cuda {
		return nil
	}
	c, err := r.ref(p.Addr)
	if err != nil {
		return err
	}
	r.line(depth, "{")
	r.line(depth+1, "const char *nf_p = (const char *)&%s;", c.s)
	for off := int64(0); off < min(p.Bytes, 32*cacheLine); off += cacheLine {
		r.line(depth+1, "__builtin_prefetch(nf_p + %d);", off)
	}
	r.line(depth, "}")
	return nil
}
