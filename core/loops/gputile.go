package loops

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/pkg/errors"

	"github.com/neoflow/neoflow/core/ir"
)

// GPUTiling is the tiled lowering of a reduction statement for a GPU
// (Schedule.GPU). Each spatial axis a of extent E is split three ways,
//
//	a = a.b*T*R + a.r*T + a.t      a.b < ceil(E/(T*R)), a.r < R, a.t < T
//
// into a block loop, a register loop and a thread loop: a block computes a
// tile of T*R points of every axis, each of its threads R points of it,
// T apart (consecutive threads take consecutive points, so stores and
// shared-memory reads are contiguous across a warp). Each reduction axis k
// of extent E is split into steps, k = k.o*K + k.i with k.o < E/K and
// k.i < K. The nest is
//
//	blocks for a.b...                  (collapsed, BindBlock)
//	  shared %sh<n>[...]               (one per staged read)
//	  threads for a.t...               (collapsed, BindThread)
//	    local %acc[prod R]             (registers: the thread's points)
//	    for a.r... %acc[r] = identity
//	    for k.o...                     (the steps)
//	      %sh<n>[e] = X[lo + e]        (cooperative copy: thread t copies
//	      ...                           elements t, t+T, ... of the tile)
//	      sync
//	      for k.i...  for a.r...       (unrolled)
//	        %acc[r] op= rhs            (staged reads from %sh<n>)
//	      sync
//	    for a.r...  Y[a] = %acc[r]
//
// A staged read is copied, for each block and step, as the box of
// elements that the thread, register and step loops reach: its indices
// must be affine in those loop variables with non-negative coefficients
// (any function of the block and step variables). Box elements outside
// the tensor (padding, the edge tiles) are copied as 0, never read from
// memory. When the box's rows are whole 16-byte vectors of the tensor's
// innermost dimension, at offsets that are vector multiples for every
// block and step (vecWidth), each thread copies a vector at a time
// (Store.Vec): 4 float32, 2 float64 or 4 float16/bfloat16 elements, all
// inside the tensor or all outside. The statement reads the zeros only where its own where's guard
// fails. Where T*R does not divide E, the points past E compute nothing
// and store nothing (an If guard).
type GPUTiling struct {
	// Spatial gives the thread and register factors of spatial axes; an
	// axis not listed has 1 and 1 (one point per block).
	Spatial []GPUAxis
	// Steps gives the step size K of reduction axes; K must divide the
	// axis's extent. An axis not listed is done in one step (K = E).
	Steps []GPUStep
	// Stage lists the reads copied into shared memory, as positions in
	// StageableReads.
	Stage []int
}

// GPUAxis is the split of one spatial axis.
type GPUAxis struct {
	Axis          string
	Threads, Regs int64
}

// GPUStep is the step size of one reduction axis.
type GPUStep struct {
	Axis string
	Tile int64
}

// Limits of a GPU tiling: the static shared memory of a block, the
// threads of a block, and the accumulator registers of a thread.
const (
	MaxSharedBytes = 48 << 10
	MaxGPUThreads  = 1024
	MaxGPURegs     = 256
)

// String is the tiling as Dump prints it.
func (g *GPUTiling) String() string {
	var b strings.Builder
	b.WriteString("gpu")
	for _, a := range g.Spatial {
		fmt.Fprintf(&b, " %s:%dx%d", a.Axis, a.Threads, a.Regs)
	}
	for _, s := range g.Steps {
		fmt.Fprintf(&b, " %s/%d", s.Axis, s.Tile)
	}
	if len(g.Stage) > 0 {
		fmt.Fprintf(&b, " stage %v", g.Stage)
	}
	return b.String()
}

// StageableReads lists the reads of st that GPUTiling.Stage may copy, by
// their text: reads of a tensor other than st's own with index
// expressions that read no tensor, under a where or not (the copy is
// guarded by the tensor's bounds, so an out-of-bounds index that the where
// discards is harmless). Equal reads appear once; a stage replaces every
// occurrence.
func StageableReads(st *ir.BoundStmt) []string {
	var out []string
	Walk(st.Stmt.RHS, func(e ir.Expr) {
		a, ok := e.(*ir.Access)
		if !ok || a.Tensor == st.Stmt.Tensor || slices.ContainsFunc(a.Indices, func(x ir.Expr) bool { return readsTensor(x, "") }) {
			return
		}
		if s := ir.ExprString(a); !slices.Contains(out, s) {
			out = append(out, s)
		}
	})
	return out
}

// Check reports why g is not a valid GPU tiling of statement st of spec.
func (g *GPUTiling) Check(spec *ir.Spec, st *ir.BoundStmt) error {
	_, err := g.resolve(spec, st)
	return err
}

// TryStage stages read r (a position in StageableReads) when g stays a
// valid tiling of st with it, and reports whether it did; g is unchanged
// otherwise (Stage stays nil when nothing is staged).
func (g *GPUTiling) TryStage(spec *ir.Spec, st *ir.BoundStmt, r int) bool {
	prev := g.Stage
	g.Stage = append(slices.Clone(prev), r)
	if g.Check(spec, st) != nil {
		g.Stage = prev
		return false
	}
	return true
}

// gpuPlan is a checked GPUTiling of one statement.
type gpuPlan struct {
	st      *ir.BoundStmt
	axes    []gpuAxis // spatial, statement order
	steps   []gpuStep // reduction, statement order
	threads int64
	regs    int64
	// env maps the statement's variables to loop expressions; ext holds
	// the extents of the loop variables, inner those of the variables
	// that vary within a block's step (thread, register, step-inner),
	// perThread the register and step-inner ones (not around a copy).
	env       map[string]ir.Expr
	ext       map[string]int64
	inner     map[string]int64
	perThread map[string]bool
	stages    []stagePlan
}

type gpuAxis struct {
	v       ir.Var
	t, r, b int64
}

func (a gpuAxis) edge() bool { return a.v.Extent%(a.t*a.r) != 0 }

type gpuStep struct {
	v    ir.Var
	k, o int64
}

// stagePlan is one staged read: its box, origin and shared buffer.
type stagePlan struct {
	local string
	src   *ir.Access // the read in loop variables
	sub   string     // its text
	lo    []ir.Expr  // the box's origin: src's indices at inner variables 0
	box   []int64
	off   []ir.Expr // src's indices minus lo, in inner variables
	n     int64     // elements of the box
	len   int64     // n rounded up to the block size
	// vec is the elements each thread copies at once (vecWidth, which
	// divides n), rounds how many times each thread copies.
	vec, rounds int64
}

// resolve checks g against statement st of spec.
func (g *GPUTiling) resolve(spec *ir.Spec, st *ir.BoundStmt) (*gpuPlan, error) {
	if st.Stmt.Reduce == ir.Assign {
		return nil, errors.New("a GPU tiling needs a reduction statement")
	}
	if len(st.Spatial) == 0 {
		return nil, errors.New("a GPU tiling needs a spatial axis")
	}
	p := &gpuPlan{st: st, threads: 1, regs: 1, env: map[string]ir.Expr{}, ext: map[string]int64{}, inner: map[string]int64{}, perThread: map[string]bool{}}
	seen := map[string]bool{}
	split := map[string]GPUAxis{}
	for _, a := range g.Spatial {
		ax, red, ok := axis(st, a.Axis)
		switch {
		case !ok || red:
			return nil, errors.Errorf("GPU split of %s: not a spatial axis of the statement", a.Axis)
		case seen[a.Axis]:
			return nil, errors.Errorf("GPU split of %s given twice", a.Axis)
		case a.Threads < 1 || a.Regs < 1:
			return nil, errors.Errorf("GPU split of %s: threads %d and registers %d must be at least 1", a.Axis, a.Threads, a.Regs)
		case a.Threads*a.Regs > ax.Extent:
			return nil, errors.Errorf("GPU split of %s: a tile of %d×%d exceeds its extent %d", a.Axis, a.Threads, a.Regs, ax.Extent)
		}
		seen[a.Axis] = true
		split[a.Axis] = a
	}
	for _, v := range st.Spatial {
		a := gpuAxis{v: v, t: 1, r: 1}
		if s, ok := split[v.Name]; ok {
			a.t, a.r = s.Threads, s.Regs
		}
		a.b = (v.Extent + a.t*a.r - 1) / (a.t * a.r)
		p.threads *= a.t
		p.regs *= a.r
		p.axes = append(p.axes, a)
	}
	if p.threads > MaxGPUThreads {
		return nil, errors.Errorf("GPU tiling: %d threads per block exceed %d", p.threads, MaxGPUThreads)
	}
	if p.regs > MaxGPURegs {
		return nil, errors.Errorf("GPU tiling: %d accumulators per thread exceed %d", p.regs, MaxGPURegs)
	}
	steps := map[string]int64{}
	for _, s := range g.Steps {
		ax, red, ok := axis(st, s.Axis)
		switch {
		case !ok || !red:
			return nil, errors.Errorf("GPU step of %s: not a reduction axis of the statement", s.Axis)
		case seen[s.Axis]:
			return nil, errors.Errorf("GPU step of %s given twice", s.Axis)
		case s.Tile < 1 || ax.Extent%s.Tile != 0:
			return nil, errors.Errorf("GPU step of %s: %d does not divide its extent %d", s.Axis, s.Tile, ax.Extent)
		}
		seen[s.Axis] = true
		steps[s.Axis] = s.Tile
	}
	for _, v := range st.Reduction {
		k, ok := steps[v.Name]
		if !ok {
			k = v.Extent
		}
		p.steps = append(p.steps, gpuStep{v: v, k: k, o: v.Extent / k})
	}
	p.bind()
	reads := StageableReads(st)
	shared := int64(0)
	for i, r := range g.Stage {
		if r < 0 || r >= len(reads) {
			return nil, errors.Errorf("stage of read %d: the statement has %d stageable reads", r, len(reads))
		}
		if slices.Contains(g.Stage[:i], r) {
			return nil, errors.Errorf("read %s staged twice", reads[r])
		}
		sp, err := p.stage(spec, fmt.Sprintf("%ssh%d", LocalPrefix, i), findRead(st.Stmt.RHS, reads[r]))
		if err != nil {
			return nil, err
		}
		shared += sp.len * int64(spec.DType.Compute().Size()) // shared arrays hold the compute type
		p.stages = append(p.stages, sp)
	}
	if shared > MaxSharedBytes {
		return nil, errors.Errorf("GPU tiling: the staged reads need %d bytes of shared memory, more than %d", shared, MaxSharedBytes)
	}
	return p, nil
}

// Loop variable names of the GPU tiling.
func blockVar(a string) string  { return a + ".b" }
func threadVar(a string) string { return a + ".t" }
func regVar(a string) string    { return a + ".r" }
func stepVar(k string) string   { return k + ".o" }
func innerVar(k string) string  { return k + ".i" }

// bind maps each statement variable to its loop expression and records
// the loop extents. A loop of extent 1 is not built (its variable is 0),
// except that the first spatial axis always has a block loop and the last
// a thread loop, which carry the bindings.
func (p *gpuPlan) bind() {
	term := func(name string, ext, weight int64, keep bool) ir.Expr {
		if ext == 1 && !keep {
			return Lit(0)
		}
		p.ext[name] = ext
		return Mul(Var(name), Lit(weight))
	}
	n := len(p.axes)
	for i, a := range p.axes {
		b := term(blockVar(a.v.Name), a.b, a.t*a.r, i == 0 && !p.anyBlocks())
		r := term(regVar(a.v.Name), a.r, a.t, false)
		t := term(threadVar(a.v.Name), a.t, 1, i == n-1 && p.threads == 1)
		if a.r > 1 {
			p.inner[regVar(a.v.Name)] = a.r
			p.perThread[regVar(a.v.Name)] = true
		}
		if _, ok := p.ext[threadVar(a.v.Name)]; ok {
			p.inner[threadVar(a.v.Name)] = a.t
		}
		p.env[a.v.Name] = Add(Add(b, r), t)
	}
	for _, s := range p.steps {
		o := term(stepVar(s.v.Name), s.o, s.k, false)
		k := term(innerVar(s.v.Name), s.k, 1, false)
		if s.k > 1 {
			p.inner[innerVar(s.v.Name)] = s.k
			p.perThread[innerVar(s.v.Name)] = true
		}
		p.env[s.v.Name] = Add(o, k)
	}
}

func (p *gpuPlan) anyBlocks() bool {
	for _, a := range p.axes {
		if a.b > 1 {
			return true
		}
	}
	return false
}

// stage plans the shared copy of read (in statement variables).
func (p *gpuPlan) stage(spec *ir.Spec, local string, read *ir.Access) (stagePlan, error) {
	src := Subst(read, p.env).(*ir.Access)
	sp := stagePlan{local: local, src: src, sub: ir.ExprString(src), n: 1}
	zero := map[string]ir.Expr{}
	for v := range p.inner {
		zero[v] = Lit(0)
	}
	vars := slices.Sorted(maps.Keys(p.inner))
	for _, x := range src.Indices {
		box := int64(1)
		var off ir.Expr = Lit(0)
		for _, v := range vars {
			c, ok := coefficient(x, v)
			if !ok || c < 0 {
				return stagePlan{}, errors.Errorf("stage of %s: index %s is not affine with non-negative coefficients in the tile's loop variable %s", ir.ExprString(read), ir.ExprString(x), v)
			}
			box += c * (p.inner[v] - 1)
			off = Add(off, Mul(Var(v), Lit(c)))
		}
		sp.lo = append(sp.lo, Subst(x, zero))
		sp.box = append(sp.box, box)
		sp.off = append(sp.off, off)
		sp.n *= box
	}
	sp.len = (sp.n + p.threads - 1) / p.threads * p.threads
	t := spec.Tensor(read.Tensor)
	if t == nil || len(t.Shape) != len(sp.box) {
		return stagePlan{}, errors.Errorf("stage of %s: no such tensor", ir.ExprString(read))
	}
	sp.vec = vecWidth(spec, sp, t, p.ext)
	sp.rounds = (sp.n/sp.vec + p.threads - 1) / p.threads
	return sp, nil
}

// access is the staged copy's element that src reads.
func (sp *stagePlan) access() *ir.Access {
	return &ir.Access{Tensor: sp.local, Indices: []ir.Expr{flatten(sp.off, sp.box)}}
}

// flatten is the row-major offset of coordinates xs in a box of extents
// ext: sum of xs[d] * prod(ext[d+1:]).
func flatten(xs []ir.Expr, ext []int64) ir.Expr {
	var x ir.Expr = Lit(0)
	stride := int64(1)
	for d := len(xs) - 1; d >= 0; d-- {
		x = Add(Mul(xs[d], Lit(stride)), x)
		stride *= ext[d]
	}
	return x
}

// unflatten is flatten's inverse: the coordinates of row-major offset q
// in a box of extents ext, (q / prod(ext[d+1:])) % ext[d]. bounded says
// that q lies in the box, so the outermost coordinate needs no modulo.
func unflatten(q ir.Expr, ext []int64, bounded bool) []ir.Expr {
	out := make([]ir.Expr, len(ext))
	stride := int64(1)
	for d := len(ext) - 1; d >= 0; d-- {
		x := simplify(&ir.Binary{Op: ir.Div, X: q, Y: Lit(stride)}, ir.KindMemo{})
		if d > 0 || !bounded {
			x = simplify(&ir.Binary{Op: ir.Mod, X: x, Y: Lit(ext[d])}, ir.KindMemo{})
		}
		out[d] = x
		stride *= ext[d]
	}
	return out
}

// loopChain appends perfectly nested loops over vars (outermost first)
// to *body, the first bound by bind and collapsing all of them, and
// returns the innermost body.
func loopChain(body *[]Node, vars []ir.Var, bind Binding) *[]Node {
	for i, v := range vars {
		lp := &Loop{Var: v.Name, Extent: v.Extent}
		if i == 0 {
			lp.Bind, lp.Collapse = bind, len(vars)
		}
		*body = append(*body, lp)
		body = &lp.Body
	}
	return body
}

// lowerGPU lowers nest's statement by g.
func lowerGPU(spec *ir.Spec, nest *Nest, g *GPUTiling) error {
	p, err := g.resolve(spec, nest.Stmt)
	if err != nil {
		return err
	}
	st := nest.Stmt.Stmt
	// Block and thread loops, collapsed.
	loopsOf := func(name func(string) string) []ir.Var {
		var out []ir.Var
		for _, a := range p.axes {
			if ext, ok := p.ext[name(a.v.Name)]; ok {
				out = append(out, ir.Var{Name: name(a.v.Name), Extent: ext})
			}
		}
		return out
	}
	body := loopChain(&nest.Body, loopsOf(blockVar), BindBlock)
	for _, sp := range p.stages {
		*body = append(*body, &Local{Name: sp.local, Len: sp.len, Shared: true})
	}
	threads := loopsOf(threadVar)
	body = loopChain(body, threads, BindThread)

	acc := &ir.Access{Tensor: accName}
	if p.regs > 1 {
		var rs []ir.Expr
		var ext []int64
		for _, a := range p.axes {
			if a.r > 1 {
				rs = append(rs, Var(regVar(a.v.Name)))
				ext = append(ext, a.r)
			}
		}
		acc.Indices = []ir.Expr{flatten(rs, ext)}
	}
	regLoops := func(body *[]Node) *[]Node {
		for _, a := range p.axes {
			if a.r > 1 {
				lp := &Loop{Var: regVar(a.v.Name), Extent: a.r, Unroll: int(a.r)}
				*body = append(*body, lp)
				body = &lp.Body
			}
		}
		return body
	}
	var edges []ir.Expr
	for _, a := range p.axes {
		if a.edge() {
			edges = append(edges, &ir.Binary{Op: ir.Lt, X: p.env[a.v.Name], Y: Lit(a.v.Extent)})
		}
	}
	guard := func(n Node) Node {
		if c := ir.AndAll(edges); c != nil {
			return &If{Cond: c, Body: []Node{n}}
		}
		return n
	}

	*body = append(*body, &Local{Name: accName, Len: p.regs})
	init := regLoops(body)
	*init = append(*init, &Store{Dst: acc, Op: ir.Assign, Value: &ir.FloatLit{Value: Identity(st.Reduce)}})

	step := body
	for _, s := range p.steps {
		if v := stepVar(s.v.Name); p.ext[v] > 1 {
			lp := &Loop{Var: v, Extent: s.o}
			*step = append(*step, lp)
			step = &lp.Body
		}
	}
	for _, sp := range p.stages {
		p.copyStage(spec, step, sp, threads)
	}
	if len(p.stages) > 0 {
		*step = append(*step, &Sync{})
	}
	comp := step
	for _, s := range p.steps {
		if v := innerVar(s.v.Name); p.ext[v] > 1 {
			lp := &Loop{Var: v, Extent: s.k, Unroll: int(s.k)}
			*comp = append(*comp, lp)
			comp = &lp.Body
		}
	}
	comp = regLoops(comp)
	rhs := Subst(st.RHS, p.env)
	if len(p.stages) > 0 {
		repl := map[string]ir.Expr{}
		for i := range p.stages {
			repl[p.stages[i].sub] = p.stages[i].access()
		}
		rhs = ir.Rewrite(rhs, func(e ir.Expr) ir.Expr {
			if a, ok := e.(*ir.Access); ok {
				return repl[ir.ExprString(a)] // nil keeps a read not staged
			}
			return nil
		})
	}
	*comp = append(*comp, guard(&Store{Dst: acc, Op: st.Reduce, Value: rhs}))
	if len(p.stages) > 0 {
		// The next step's (or block's) copy overwrites the buffers.
		*step = append(*step, &Sync{})
	}

	out := &ir.Access{Tensor: st.Tensor}
	for _, a := range p.axes {
		out.Indices = append(out.Indices, p.env[a.v.Name])
	}
	fin := regLoops(body)
	*fin = append(*fin, guard(&Store{Dst: out, Op: ir.Assign, Value: acc}))
	return nil
}

// copyStage appends the cooperative copy of sp to *body: the block's
// threads copy the box's elements e = tid, tid + T, ... (T threads), each
// from the tensor element lo + the box coordinates of e, or 0 where that
// may lie outside the tensor.
func (p *gpuPlan) copyStage(spec *ir.Spec, body *[]Node, sp stagePlan, threads []ir.Var) {
	ts := make([]ir.Expr, len(threads))
	ext := make([]int64, len(threads))
	for i, v := range threads {
		ts[i], ext[i] = Var(v.Name), v.Extent
	}
	tid := flatten(ts, ext)
	around := map[string]int64{} // the loops around the copy
	for v, n := range p.ext {
		if !p.perThread[v] {
			around[v] = n
		}
	}
	t := spec.Tensor(sp.src.Tensor)
	vec, rounds := sp.vec, sp.rounds
	e := tid // the vector this thread copies
	if rounds > 1 {
		c := strings.TrimPrefix(sp.local, LocalPrefix) + ".c"
		lp := &Loop{Var: c, Extent: rounds}
		*body = append(*body, lp)
		body = &lp.Body
		e = Add(Mul(Var(c), Lit(p.threads)), tid)
		around[c] = rounds
	}
	nv := sp.n / vec
	guarded := rounds*p.threads > nv
	ve := e
	if guarded && vec > 1 {
		// Only vectors ve < nv are copied (the guard below); ve % nv keeps
		// the index within the array where the guard does not count.
		e = &ir.Binary{Op: ir.Mod, X: e, Y: Lit(nv)}
	}
	e = Mul(e, Lit(vec))
	src := &ir.Access{Tensor: sp.src.Tensor}
	var inside []ir.Expr
	for d, coord := range unflatten(e, sp.box, !guarded || vec > 1) {
		x := Add(sp.lo[d], coord)
		src.Indices = append(src.Indices, x)
		lo, hi, ok := IndexRange(x, around)
		if !ok || lo < 0 {
			inside = append(inside, &ir.Binary{Op: ir.Ge, X: x, Y: Lit(0)})
		}
		if !ok || hi >= t.Shape[d] {
			inside = append(inside, &ir.Binary{Op: ir.Lt, X: x, Y: Lit(t.Shape[d])})
		}
	}
	var val ir.Expr = src
	if c := ir.AndAll(inside); c != nil {
		val = &ir.Where{Cond: c, Then: src, Else: &ir.FloatLit{Value: 0}}
	}
	var n Node = &Store{Dst: &ir.Access{Tensor: sp.local, Indices: []ir.Expr{e}}, Op: ir.Assign, Value: val, Vec: int(vec)}
	if guarded {
		n = &If{Cond: &ir.Binary{Op: ir.Lt, X: ve, Y: Lit(nv)}, Body: []Node{n}}
	}
	*body = append(*body, n)
}

// vecWidth is the elements each thread of a cooperative copy moves at
// once: a vector (4 float32, 2 float64, or 4 float16/bfloat16, which
// widen to the 16 bytes of 4 float32 in shared memory) when the box's rows are
// whole vectors of the tensor's innermost dimension at vector-aligned
// offsets, for every value of the variables in around (the block and
// step loops that the box's origin depends on); 1 otherwise.
// Every vector then lies wholly inside or wholly outside the tensor,
// since its bounds on the innermost dimension are vector multiples too.
func vecWidth(spec *ir.Spec, sp stagePlan, t *ir.TensorDecl, around map[string]int64) int64 {
	v := map[ir.DType]int64{ir.Float32: 4, ir.Float64: 2, ir.Float16: 4, ir.BFloat16: 4}[spec.DType]
	last := len(sp.box) - 1
	if v == 0 || last < 0 || sp.box[last]%v != 0 || t.Shape[last]%v != 0 {
		return 1
	}
	lo := sp.lo[last]
	if _, _, ok := IndexRange(lo, around); !ok {
		return 1
	}
	zero := map[string]ir.Expr{}
	for x := range around {
		c, ok := coefficient(lo, x)
		if !ok || c%v != 0 {
			return 1
		}
		zero[x] = Lit(0)
	}
	if k, _, ok := IndexRange(Subst(lo, zero), nil); !ok || k%v != 0 {
		return 1
	}
	return v
}
