package loops

import (
	"fmt"
	"math"

	"github.com/pkg/errors"

	"github.com/neoflow/neoflow/core/ir"
)

// accName is the Local a reduction accumulates into; redName is the
// scalar Local a lane-parallel reduction combines its lanes into.
const (
	accName = LocalPrefix + "acc"
	redName = LocalPrefix + "red"
	remName = LocalPrefix + "rem"
)

// LowerNests lowers every statement of spec, asking sched for the
// schedule of each: the loop nests as the schedule's family builds them.
// It is the pipeline's "lower" pass (core/pipeline); guard hoisting, lane
// versioning and the bounds check of the nests are the passes after it
// (HoistFunc, VersionFunc, CheckFunc). A fused group whose lead's
// schedule has a Group is one nest; a reduction's epilogue statements
// join its nest where its schedule stores complete elements
// (epilogue.go); the members of other groups are lowered one by one.
func LowerNests(spec *ir.Spec, sched func(spec *ir.Spec, i int) Schedule) (*Func, error) {
	if err := checkSpec(spec); err != nil {
		return nil, errors.Wrap(err, "lowering")
	}
	fn := &Func{Spec: spec}
	for i := 0; i < len(spec.Stmts); {
		s := sched(spec, i)
		var n *Nest
		var err error
		if s.Group != nil {
			n, err = LowerGroup(spec, GroupMembers(spec, i), s)
		} else {
			n, err = LowerNest(spec, i, s)
		}
		if err != nil {
			return nil, err
		}
		if idx := GroupMembers(spec, i); s.Group == nil && len(idx) > 1 {
			sts := make([]*ir.BoundStmt, len(idx))
			for k, j := range idx {
				sts[k] = spec.Stmts[j]
			}
			if EpilogueMembers(sts) && attachEpilogue(n, sts[1:]) {
				n.Members = idx
			}
		}
		fn.Nests = append(fn.Nests, n)
		i += max(len(n.Members), 1)
	}
	return fn, nil
}

// LowerGroup lowers the statements members of spec (a statement and the
// ones joined to it, GroupMembers) as one nest under s, whose Group is
// set.
func LowerGroup(spec *ir.Spec, members []int, s Schedule) (*Nest, error) {
	if err := s.check(spec.Stmts[members[0]]); err != nil || s.Group == nil {
		return nil, errors.Errorf("lowering the fused group of statement %d with schedule %s: %v", members[0], s, err)
	}
	sts := make([]*ir.BoundStmt, len(members))
	for k, i := range members {
		if i < 0 || i >= len(spec.Stmts) || k > 0 && (i != members[k-1]+1 || !spec.Stmts[i].Joined) {
			return nil, errors.Errorf("lowering: statements %v are not a fused group", members)
		}
		sts[k] = spec.Stmts[i]
	}
	nest := &Nest{Index: members[0], Stmt: sts[0], Members: members, Schedule: s}
	if err := lowerGroup(spec, nest, sts, s.Group); err != nil {
		return nil, errors.Wrapf(err, "lowering the fused group of statements %v with schedule %s", members, s)
	}
	return nest, nil
}

// LowerNest lowers statement i of spec with schedule s, before the passes
// that follow lowering.
func LowerNest(spec *ir.Spec, i int, s Schedule) (*Nest, error) {
	if i < 0 || i >= len(spec.Stmts) {
		return nil, errors.Errorf("lowering: no statement %d", i)
	}
	st := spec.Stmts[i]
	if err := s.check(st); err != nil {
		return nil, errors.Wrapf(err, "lowering statement %d (%s) with schedule %+v", i, st.Stmt.Tensor, s)
	}
	nest := &Nest{Index: i, Stmt: st, Schedule: s}
	var err error
	switch {
	case s.MMA != nil:
		err = lowerMMA(spec, nest, s.MMA)
	case s.GPUReduce != nil:
		err = lowerGPUReduce(nest, s.GPUReduce)
	case s.GPU != nil:
		err = lowerGPU(spec, nest, s.GPU)
	case s.Tiling != nil:
		err = lowerTiled(spec, nest, s.Tiling)
	case s.Scatter:
		f, _ := matchScatter(st) // s.check has matched it
		lowerScatter(nest, f, s)
	default:
		l := &lowerer{st: st, env: map[string]ir.Expr{}}
		l.build(&nest.Body, s)
		if ax, _, ok := s.lane(st); ok && s.LaneSize != "" {
			nest.SizeValues = map[string]int64{s.LaneSize: ax.Extent}
		}
		if s.ParallelDepth > 0 {
			l.chain[0].Parallel = true
			l.chain[0].Collapse = s.ParallelDepth
		}
	}
	if err != nil {
		return nil, errors.Wrapf(err, "lowering statement %d (%s) with schedule %s", i, st.Stmt.Tensor, s)
	}
	return nest, nil
}

// cpuLoops reports whether the nest is CPU loops of the untiled or tiled
// family, the nests that guard hoisting and lane versioning rewrite (GPU
// and scatter nests place their guards themselves).
func (n *Nest) cpuLoops() bool {
	s := n.Schedule
	return s.GPU == nil && s.GPUReduce == nil && s.MMA == nil && !s.Scatter
}

// HoistFunc is the "hoist-guards" pass: HoistGuards on the body of every
// CPU nest (untiled and tiled), in place.
func HoistFunc(fn *Func) *Func {
	for _, n := range fn.Nests {
		if n.cpuLoops() {
			n.Body = HoistGuards(n.Body)
		}
	}
	return fn
}

// VersionFunc is the "version-lanes" pass: VersionLanes on the body of
// every CPU nest, in place, after HoistFunc.
func VersionFunc(fn *Func) *Func {
	for _, n := range fn.Nests {
		if n.cpuLoops() {
			n.Body = VersionLanes(n.Body)
		}
	}
	return fn
}

// CheckFunc is the "check-bounds" pass: an error when checkReach finds an
// access of some nest that may leave its buffer. It runs last, on the
// nests as the renderers take them.
func CheckFunc(fn *Func) (*Func, error) {
	for _, n := range fn.Nests {
		if err := checkReach(fn.Spec, n); err != nil {
			return nil, errors.Wrapf(err, "lowering statement %d (%s) with schedule %s: internal error", n.Index, n.Stmt.Stmt.Tensor, n.Schedule)
		}
	}
	return fn, nil
}

// lowerer builds the nest of one statement.
type lowerer struct {
	st *ir.BoundStmt
	// env maps the statement's index variables to their loop expressions.
	env map[string]ir.Expr
	// chain lists the spatial loops outermost first, in the order of
	// parallelCandidates (loop order).
	chain []*Loop
}

// loop appends a loop over v to *body, or binds v to 0 when its extent is
// 1, and returns the body the loop's contents go into.
func (l *lowerer) loop(body *[]Node, v ir.Var, spatial bool) *[]Node {
	if v.Extent == 1 {
		l.env[v.Name] = Lit(0)
		return body
	}
	lp := &Loop{Var: v.Name, Extent: v.Extent}
	*body = append(*body, lp)
	l.env[v.Name] = Var(v.Name)
	if spatial {
		l.chain = append(l.chain, lp)
	}
	return &lp.Body
}

func (l *lowerer) build(root *[]Node, s Schedule) {
	ord := s.order(l.st)
	n := len(ord)
	lane, red, ok := s.lane(l.st)
	split := ok && !red
	cur := root
	for i, ax := range ord {
		if split && i == n-1 {
			break
		}
		cur = l.loop(cur, ax, true)
	}
	for _, r := range l.st.Reduction {
		// Reduction variables are bound up front; their loops are built
		// by compute and reduceLanes.
		if r.Extent == 1 {
			l.env[r.Name] = Lit(0)
		} else {
			l.env[r.Name] = Var(r.Name)
		}
	}
	switch {
	case !ok:
		l.compute(cur, 1, "")
		return
	case red:
		l.reduceLanes(cur, lane, s.VectorWidth, s.LaneSize)
		return
	case s.LaneSize != "":
		l.sizedLanes(cur, lane, s.VectorWidth, s.LaneSize)
		return
	}
	vw := s.VectorWidth
	ax := lane
	outer, laneVar := ax.Name+".o", ax.Name+".l"
	m, t := ax.Extent/vw, ax.Extent%vw
	main := cur
	base := Lit(0)
	if m > 1 {
		lp := &Loop{Var: outer, Extent: m}
		*cur = append(*cur, lp)
		l.chain = append(l.chain, lp)
		main = &lp.Body
		base = Mul(Var(outer), Lit(vw))
	} else if t > 0 {
		b := &Block{Comment: fmt.Sprintf("%s in [0, %d)", ax.Name, vw)}
		*cur = append(*cur, b)
		main = &b.Body
	}
	l.env[ax.Name] = Add(base, Var(laneVar))
	l.compute(main, vw, laneVar)
	if t > 0 {
		b := &Block{Comment: fmt.Sprintf("remainder: %s in [%d, %d)", ax.Name, m*vw, ax.Extent)}
		*cur = append(*cur, b)
		if t == 1 {
			l.env[ax.Name] = Lit(m * vw)
		} else {
			l.env[ax.Name] = Add(Var(laneVar), Lit(m*vw))
		}
		l.compute(&b.Body, t, laneVar)
	}
}

// sizedLanes appends the split of spatial lane axis ax, which runs to the
// size variable size, into vw lanes to *body, the same at every value of
// the size: the outer loop "<ax>.o" to size / vw around the lane loop, and
// the remainder loop "<ax>.r" to size % vw, one point at a time.
func (l *lowerer) sizedLanes(body *[]Node, ax ir.Var, vw int64, size string) {
	outer, lane, rem := ax.Name+".o", ax.Name+".l", ax.Name+".r"
	lp := &Loop{Var: outer, Extent: ax.Extent / vw, Size: size, By: vw}
	*body = append(*body, lp)
	l.chain = append(l.chain, lp)
	l.env[ax.Name] = Add(Mul(Var(outer), Lit(vw)), Var(lane))
	l.compute(&lp.Body, vw, lane)
	rp := &Loop{Var: rem, Extent: ax.Extent % vw, Size: size, By: vw, Rem: true}
	*body = append(*body, rp)
	l.env[ax.Name] = Add(sizedBase(size, vw), Var(rem))
	l.compute(&rp.Body, 1, "")
}

// sizedBase is the first point of the remainder of a lane split of vw
// lanes over an axis that runs to size: (size / vw) * vw.
func sizedBase(size string, vw int64) ir.Expr {
	return &ir.Binary{Op: ir.Mul, X: &ir.Binary{Op: ir.Div, X: Var(size), Y: Lit(vw)}, Y: Lit(vw)}
}

// out is the statement's store target at the current spatial point.
func (l *lowerer) out() *ir.Access {
	return outAccess(l.st, l.env)
}

// compute appends the statement's computation for w lanes (lane variable
// lane; w == 1 means no lane loop) to *body.
func (l *lowerer) compute(body *[]Node, w int64, lane string) {
	st := l.st.Stmt
	lanes := func(s *Store) Node {
		if w == 1 {
			return s
		}
		return &Loop{Var: lane, Extent: w, Vector: true, Body: []Node{s}}
	}
	out := l.out()
	rhs := Subst(st.RHS, l.env)
	if st.Reduce == ir.Assign {
		*body = append(*body, lanes(&Store{Dst: out, Op: ir.Assign, Value: rhs}))
		return
	}
	acc := func() *ir.Access {
		a := &ir.Access{Tensor: accName}
		if w > 1 {
			a.Indices = []ir.Expr{Var(lane)}
		}
		return a
	}
	*body = append(*body,
		&Local{Name: accName, Len: w},
		lanes(&Store{Dst: acc(), Op: ir.Assign, Value: &ir.FloatLit{Value: Identity(st.Reduce)}}))
	cur := body
	for _, r := range l.st.Reduction {
		if r.Extent > 1 {
			lp := &Loop{Var: r.Name, Extent: r.Extent}
			*cur = append(*cur, lp)
			cur = &lp.Body
		}
	}
	*cur = append(*cur, lanes(&Store{Dst: acc(), Op: st.Reduce, Value: rhs}))
	*body = append(*body, lanes(&Store{Dst: out, Op: ir.Assign, Value: acc()}))
}

// reduceLanes appends a lane-parallel reduction over reduction axis ax,
// split into vw lanes, to *body: acc[vw] set to the identity; the other
// reduction loops, in statement order; inside them the outer split loop
// "<ax>.o" with the lane loop "<ax>.l", where lane l folds the elements
// l, l+vw, l+2*vw, ... into acc[l], and a remainder block that folds the
// last t elements: one into acc[0], or t > 1 in t lanes into rem[0..t-1],
// an accumulator of their own; then the horizontal combine red = identity;
// for <ax>.h < vw: red = red op acc[<ax>.h], then for <ax>.hr < t: red =
// red op rem[<ax>.hr] (in lane order, serially) and the store of red.
//
// Folded into acc[0..t-1] as well, the remainder's t-lane loop and the
// main vw-lane loop shared one array, which GCC then kept in memory: each
// fold loaded, added and stored it, a dependency through memory of about
// ten cycles a vector. A depthwise 3x3 weight gradient (16 lanes and 12,
// 16 x 60 x 28 x 28) took 2.4 ms so, 1.5 ms with rem (2-core Xeon, the
// kernels timed in turns).
//
// When the axis runs to the size variable size (Schedule.LaneSize), the
// outer loop runs to size / vw and the remainder is a loop to size % vw
// at every size, folding into rem[0], combined last.
func (l *lowerer) reduceLanes(body *[]Node, ax ir.Var, vw int64, size string) {
	st := l.st.Stmt
	outer, lane, horiz := ax.Name+".o", ax.Name+".l", ax.Name+".h"
	acc := func(i ir.Expr) *ir.Access { return &ir.Access{Tensor: accName, Indices: []ir.Expr{i}} }
	lanes := func(w int64, s *Store) Node {
		return &Loop{Var: lane, Extent: w, Vector: true, Body: []Node{s}}
	}
	m, t := ax.Extent/vw, ax.Extent%vw
	rem := func(i ir.Expr) *ir.Access { return &ir.Access{Tensor: remName, Indices: []ir.Expr{i}} }
	if size != "" {
		rem = func(ir.Expr) *ir.Access { return &ir.Access{Tensor: remName} } // a scalar
	}
	*body = append(*body,
		&Local{Name: accName, Len: vw},
		lanes(vw, &Store{Dst: acc(Var(lane)), Op: ir.Assign, Value: &ir.FloatLit{Value: Identity(st.Reduce)}}))
	if size != "" {
		*body = append(*body,
			&Local{Name: remName, Len: 1},
			&Store{Dst: rem(Lit(0)), Op: ir.Assign, Value: &ir.FloatLit{Value: Identity(st.Reduce)}})
	}
	if t > 1 && size == "" {
		*body = append(*body,
			&Local{Name: remName, Len: t},
			lanes(t, &Store{Dst: rem(Var(lane)), Op: ir.Assign, Value: &ir.FloatLit{Value: Identity(st.Reduce)}}))
	}
	cur := body
	for _, r := range l.st.Reduction {
		if r.Extent > 1 && r.Name != ax.Name {
			lp := &Loop{Var: r.Name, Extent: r.Extent}
			*cur = append(*cur, lp)
			cur = &lp.Body
		}
	}
	main := cur
	base := Lit(0)
	if m > 1 || size != "" {
		lp := &Loop{Var: outer, Extent: m, Size: size}
		if size != "" {
			lp.By = vw
		}
		*cur = append(*cur, lp)
		main = &lp.Body
		base = Mul(Var(outer), Lit(vw))
	}
	l.env[ax.Name] = Add(base, Var(lane))
	*main = append(*main, lanes(vw, &Store{Dst: acc(Var(lane)), Op: st.Reduce, Value: Subst(st.RHS, l.env)}))
	if size != "" {
		r := ax.Name + ".r"
		l.env[ax.Name] = Add(sizedBase(size, vw), Var(r))
		*cur = append(*cur, &Loop{Var: r, Extent: t, Size: size, By: vw, Rem: true,
			Body: []Node{&Store{Dst: rem(Lit(0)), Op: st.Reduce, Value: Subst(st.RHS, l.env)}}})
	}
	if t > 0 && size == "" {
		b := &Block{Comment: fmt.Sprintf("remainder: %s in [%d, %d)", ax.Name, m*vw, ax.Extent)}
		*cur = append(*cur, b)
		if t == 1 {
			l.env[ax.Name] = Lit(m * vw)
			b.Body = append(b.Body, &Store{Dst: acc(Lit(0)), Op: st.Reduce, Value: Subst(st.RHS, l.env)})
		} else {
			l.env[ax.Name] = Add(Var(lane), Lit(m*vw))
			b.Body = append(b.Body, lanes(t, &Store{Dst: rem(Var(lane)), Op: st.Reduce, Value: Subst(st.RHS, l.env)}))
		}
	}
	red := combineLanes(body, st.Reduce, horiz, vw, func(h ir.Expr) ir.Expr { return acc(h) })
	if size != "" {
		*body = append(*body, &Store{Dst: red, Op: st.Reduce, Value: rem(Lit(0))})
	}
	if t > 1 && size == "" {
		hr := ax.Name + ".hr"
		*body = append(*body, &Loop{Var: hr, Extent: t, Body: []Node{&Store{Dst: red, Op: st.Reduce, Value: rem(Var(hr))}}})
	}
	*body = append(*body, &Store{Dst: l.out(), Op: ir.Assign, Value: red})
}

// combineLanes appends to body the horizontal combine of a lane-parallel
// reduction: the scalar Local redName starts at the identity of op and
// combines lane(h) for h = 0, ..., n-1 in order, over loop variable
// horiz. It returns the access to the result.
func combineLanes(body *[]Node, op ir.ReduceOp, horiz string, n int64, lane func(h ir.Expr) ir.Expr) *ir.Access {
	red := &ir.Access{Tensor: redName}
	*body = append(*body,
		&Local{Name: redName, Len: 1},
		&Store{Dst: red, Op: ir.Assign, Value: &ir.FloatLit{Value: Identity(op)}},
		&Loop{Var: horiz, Extent: n, Body: []Node{&Store{Dst: red, Op: op, Value: lane(Var(horiz))}}})
	return red
}

// Identity is the starting value of a reduction: 0 for Sum, 1 for Prod,
// -inf for Max and +inf for Min.
func Identity(r ir.ReduceOp) float64 {
	switch r {
	case ir.Prod:
		return 1
	case ir.Max:
		return math.Inf(-1)
	case ir.Min:
		return math.Inf(1)
	}
	return 0
}
