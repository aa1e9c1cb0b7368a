package loops

import (
	"fmt"
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
// discards is harmless). An index tensor read (ir.Access.Indirect) is not
// staged: it is an index, not a value. Equal reads appear once; a stage
// replaces every occurrence.
func StageableReads(st *ir.BoundStmt) []string {
	var out []string
	ir.Walk(st.Stmt.RHS, func(e ir.Expr) bool {
		a, ok := e.(*ir.Access)
		if !ok || a.Indirect || a.Tensor == st.Stmt.Tensor || slices.ContainsFunc(a.Indices, func(x ir.Expr) bool { return readsTensor(x, "") }) {
			return true
		}
		if s := ir.ExprString(a); !slices.Contains(out, s) {
			out = append(out, s)
		}
		return true
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
	body := loopChain(&nest.Body, p.loopsOf(blockVar), BindBlock)
	for _, sp := range p.stages {
		*body = append(*body, &Local{Name: sp.local, Len: sp.len, Shared: true})
	}
	threads := p.loopsOf(threadVar)
	body = loopChain(body, threads, BindThread)

	acc := p.accumulator()
	edges := p.edgeConds()
	guard := func(n Node) Node {
		if c := ir.AndAll(edges); c != nil {
			return &If{Cond: c, Body: []Node{n}}
		}
		return n
	}

	*body = append(*body, &Local{Name: accName, Len: p.regs})
	init := p.regLoops(body)
	*init = append(*init, &Store{Dst: acc, Op: ir.Assign, Value: &ir.FloatLit{Value: Identity(st.Reduce)}})

	p.lowerSteps(spec, body, st, acc, threads, guard)

	out := outAccess(nest.Stmt, p.env)
	fin := p.regLoops(body)
	*fin = append(*fin, guard(&Store{Dst: out, Op: ir.Assign, Value: acc}))
	return nil
}

// loopsOf lists the loops that bind built for the spatial axes' variables
// under name (the block or the thread loops), in axis order.
func (p *gpuPlan) loopsOf(name func(string) string) []ir.Var {
	var out []ir.Var
	for _, a := range p.axes {
		if ext, ok := p.ext[name(a.v.Name)]; ok {
			out = append(out, ir.Var{Name: name(a.v.Name), Extent: ext})
		}
	}
	return out
}

// accumulator is the thread's accumulator element for the current
// register loop variables.
func (p *gpuPlan) accumulator() *ir.Access {
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
	return acc
}

// regLoops appends the (unrolled) register loops to *body and returns the
// innermost body.
func (p *gpuPlan) regLoops(body *[]Node) *[]Node {
	for _, a := range p.axes {
		if a.r > 1 {
			lp := &Loop{Var: regVar(a.v.Name), Extent: a.r, Unroll: int(a.r)}
			*body = append(*body, lp)
			body = &lp.Body
		}
	}
	return body
}

// edgeConds are the conditions that keep an edge tile's points inside the
// spatial extents, one for each axis whose tile does not divide it.
func (p *gpuPlan) edgeConds() []ir.Expr {
	var edges []ir.Expr
	for _, a := range p.axes {
		if a.edge() {
			edges = append(edges, &ir.Binary{Op: ir.Lt, X: p.env[a.v.Name], Y: Lit(a.v.Extent)})
		}
	}
	return edges
}

// lowerSteps appends to *body the step loops with their cooperative copies
// and syncs, and in them the step-inner and register loops that accumulate
// the statement into acc, each point under guard.
func (p *gpuPlan) lowerSteps(spec *ir.Spec, body *[]Node, st *ir.Stmt, acc *ir.Access, threads []ir.Var, guard func(Node) Node) {
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
	comp = p.regLoops(comp)
	rhs := p.stagedRHS(st)
	*comp = append(*comp, guard(&Store{Dst: acc, Op: st.Reduce, Value: rhs}))
	if len(p.stages) > 0 {
		// The next step's (or block's) copy overwrites the buffers.
		*step = append(*step, &Sync{})
	}
}

// stagedRHS is st's right-hand side in loop variables, with each staged
// read replaced by its element of the shared copy.
func (p *gpuPlan) stagedRHS(st *ir.Stmt) ir.Expr {
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
	return rhs
}
