package loops

import (
	"fmt"
	"strings"

	"github.com/neoflow/neoflow/core/ir"
)

// A scatter statement is a sum whose right-hand side selects, for every
// point of the reduction variables, at most one element of the left-hand
// side by equalities: the indicator form core/autodiff falls back to when
// it cannot invert an index map,
//
//	T[z1, ..., zn] += where(e1 == z1 && ... && en == zn && g, body, 0.0)
//
// The gather lowering reduces over every point for every element of T,
// |T| * |points| evaluations; the scatter visits each point once and adds
// body to T[e1, ..., en]. matchScatter gives the precise form.

// scatterForm is a statement recognized by matchScatter, in the
// statement's own variables.
type scatterForm struct {
	// targets[k] is e_k, the element index the point selects along the
	// k-th left-hand-side axis; nil for a free axis, which the scatter
	// loops over as the statement does (Y[Dst[e], f] += X[Src[e], f]:
	// f is free).
	targets []ir.Expr
	// guard lists, in the order of the original conjuncts, the conditions
	// a point must meet: each equality e_k == z_k is replaced by the range
	// checks e_k >= 0 and e_k < extent(z_k) (those not implied by the
	// variables' ranges), the other conjuncts are kept. nil means always.
	guard []ir.Expr
	// body is the value added at T[targets].
	body ir.Expr
}

// matchScatter recognizes a scatter statement. Its conditions, all on the
// statement as given:
//
//   - the operator is += and the left-hand side has at least one index;
//   - the right-hand side, after peel (where with a condition that the
//     variables' ranges decide is replaced by the chosen branch; a term
//     that peels to a zero literal is dropped from a top-level sum), is
//     where(C, B, 0) with a zero else branch (0.0, -0.0 or 0, also after
//     peel); while B peels to another where(C', B', 0), its condition joins
//     C and B' the body (where(c, where(c', b, 0), 0) is where(c && c', b, 0));
//   - C, split at && (left to right), contains for at least one
//     left-hand-side variable z_k (a target) exactly one conjunct e_k ==
//     z_k or z_k == e_k, z_k bare, with e_k an index expression that
//     mentions no left-hand-side variable and reads no tensor but an index
//     tensor; the other left-hand-side variables are free;
//   - no target occurs anywhere else: not in the body, not in the other
//     conjuncts, not in any e_k (a free variable may be in the body and
//     the other conjuncts);
//   - neither the body nor C reads T.
//
// Dropping zero terms and flattening nested wheres is exact for a +=
// statement: the gather adds 0 where the scatter adds nothing, and a sum
// that starts at +0 is never -0, so adding a zero of either sign changes
// nothing. Likewise the scatter gives each element the same terms as the
// gather, in the same order (row-major over the reduction variables).
func matchScatter(st *ir.BoundStmt) (*scatterForm, bool) {
	s := st.Stmt
	if s == nil || s.Reduce != ir.Sum || len(st.Spatial) == 0 || s.RHS == nil || st.Offset != nil {
		return nil, false
	}
	ext := map[string]int64{}
	lhs := map[string]int{}
	for k, ax := range st.Spatial {
		ext[ax.Name] = ax.Extent
		lhs[ax.Name] = k
	}
	for _, r := range st.Reduction {
		ext[r.Name] = r.Extent
	}
	var conds []ir.Expr
	e := peel(s.RHS, ext)
	for {
		w, ok := e.(*ir.Where)
		if !ok || !ir.IsZero(peel(w.Else, ext)) {
			break
		}
		conds = append(conds, ir.Conjuncts(w.Cond)...)
		e = peel(w.Then, ext)
	}
	if len(conds) == 0 {
		return nil, false
	}
	f := &scatterForm{targets: make([]ir.Expr, len(st.Spatial)), body: e}
	eqs := make([]int, len(conds)) // axis of an equality conjunct, else -1
	for i, c := range conds {
		eqs[i] = -1
		k, t, ok := targetEquality(c, lhs)
		switch {
		case ok && f.targets[k] == nil:
			f.targets[k] = t
			eqs[i] = k
		case readsTensor(c, s.Tensor):
			return nil, false
		}
	}
	targeted := map[string]int{}
	for k, t := range f.targets {
		if t != nil {
			targeted[st.Spatial[k].Name] = k
		}
	}
	if len(targeted) == 0 || mentions(f.body, targeted) || readsTensor(f.body, s.Tensor) {
		return nil, false
	}
	for i, c := range conds {
		if eqs[i] < 0 && mentions(c, targeted) {
			return nil, false
		}
	}
	for i, c := range conds {
		k := eqs[i]
		if k < 0 {
			f.guard = append(f.guard, c)
			continue
		}
		t := f.targets[k]
		sp, ok := indexSpan(t, ext)
		if !ok || sp.Lo < 0 {
			f.guard = append(f.guard, &ir.Binary{Op: ir.Ge, X: t, Y: Lit(0)})
		}
		if n := st.Spatial[k].Extent; !ok || sp.Hi >= n {
			f.guard = append(f.guard, &ir.Binary{Op: ir.Lt, X: t, Y: Lit(n)})
		}
	}
	return f, true
}

// targetEquality recognizes e == z or z == e with z a bare left-hand-side
// variable (its axis k) and e an index expression free of left-hand-side
// variables and of tensor reads, or an index tensor read (ir.Access.Indirect,
// a scatter through it, Y[Dst[e], f] += ...).
func targetEquality(c ir.Expr, lhs map[string]int) (k int, e ir.Expr, ok bool) {
	for _, p := range ir.EqOperands(c) {
		z, isIx := p[1].(*ir.Index)
		if !isIx {
			continue
		}
		k, isLHS := lhs[z.Name]
		if !isLHS || mentions(p[0], lhs) || readsTensor(p[0], "") && !ir.IsIndirect(p[0]) || ir.KindOf(p[0]) != ir.KindIndex {
			continue
		}
		return k, p[0], true
	}
	return 0, nil, false
}

// peel removes what the variables' ranges (ext) make dead at the top of a
// summand: where(c, a, b) with c decided becomes the chosen branch, and
// x + y where one side peels to a zero literal becomes the other side.
func peel(e ir.Expr, ext map[string]int64) ir.Expr {
	for {
		switch x := e.(type) {
		case *ir.Where:
			if c, ok := constBool(x.Cond, ext); ok {
				if c {
					e = x.Then
				} else {
					e = x.Else
				}
				continue
			}
		case *ir.Binary:
			if x.Op == ir.Add {
				a, b := peel(x.X, ext), peel(x.Y, ext)
				switch {
				case ir.IsZero(b):
					return a
				case ir.IsZero(a):
					return b
				}
			}
		}
		return e
	}
}

// mentions reports whether e uses one of the variables in vars.
func mentions(e ir.Expr, vars map[string]int) bool {
	found := false
	ir.Walk(e, func(x ir.Expr) bool {
		if ix, ok := x.(*ir.Index); ok {
			if _, in := vars[ix.Name]; in {
				found = true
			}
		}
		return true
	})
	return found
}

// readsTensor reports whether e reads tensor name, or any tensor when name
// is empty.
func readsTensor(e ir.Expr, name string) bool {
	found := false
	ir.Walk(e, func(x ir.Expr) bool {
		if a, ok := x.(*ir.Access); ok && (name == "" || a.Tensor == name) {
			found = true
		}
		return true
	})
	return found
}

// fillStmt is T[z1, ..., zn] = 0.0 over the left-hand side of st: the
// first nest of a scatter, scheduled like any '=' statement.
func fillStmt(st *ir.BoundStmt) *ir.BoundStmt {
	s := st.Stmt
	return &ir.BoundStmt{
		Stmt:    &ir.Stmt{Pos: s.Pos, Tensor: s.Tensor, Indices: s.Indices, Reduce: ir.Assign, RHS: &ir.FloatLit{Value: 0}},
		Spatial: st.Spatial,
		Offset:  st.Offset,
	}
}

// lowerScatter builds the nest of a scatter statement with schedule s (of
// its zero fill): a block zero-filling T (parallel and vectorized by s,
// like any '=' statement), then a block with the serial scatter, the
// reduction loops in statement order (extent-1 ones removed) around
//
//	if <guard>
//	  T[e1, ..., en] += body
//
// with the loops of the free axes (freeLoops) inside the guard: points
// that differ in a free variable never share an element, so those loops
// are parallel over blocks of the last free axis and vector within one.
//
// The scatter is serial on purpose: distinct points may select the same
// element (that is why the index map has no inverse), so parallel
// iterations would race on T. Atomics or per-thread copies of T would
// remove the race but change the summation order between runs or cost
// |T| per thread; the serial loop is race-free, deterministic whatever the
// thread count, and sums each element's terms in the interpreter's order.
// It costs O(|T| + |points|) against the gather's O(|T| * |points|).
//
// Under an atomic schedule (Schedule.Atomic, CUDA only) the scatter's
// loops form one parallel loop instead and the store is atomic.
func lowerScatter(nest *Nest, f *scatterForm, s Schedule) {
	st := nest.Stmt
	fill := &lowerer{st: fillStmt(st), env: map[string]ir.Expr{}}
	fb := &Block{Comment: "zero fill"}
	fill.build(&fb.Body, s)
	if s.ParallelDepth > 0 {
		fill.chain[0].Parallel = true
		fill.chain[0].Collapse = s.ParallelDepth
	}
	var names []string
	for _, r := range st.Reduction {
		if r.Extent != 1 {
			names = append(names, r.Name)
		}
	}
	comment := "scatter, serial: points may share an element"
	switch {
	case s.Atomic && len(names) > 0:
		comment = fmt.Sprintf("scatter over %s, parallel with atomic adds: points may share an element", strings.Join(names, ", "))
	case len(names) > 0:
		comment = fmt.Sprintf("scatter over %s, serial: points may share an element", strings.Join(names, ", "))
	}
	sb := &Block{Comment: comment}
	env := map[string]ir.Expr{}
	cur := &sb.Body
	for _, r := range st.Reduction {
		if r.Extent == 1 {
			env[r.Name] = Lit(0)
			continue
		}
		env[r.Name] = Var(r.Name)
		lp := &Loop{Var: r.Name, Extent: r.Extent}
		*cur = append(*cur, lp)
		cur = &lp.Body
	}
	atomic := s.Atomic && len(names) > 0
	free, outer, inner, fenv := freeLoops(st, f, atomic)
	if outer != nil {
		// The block loop goes outermost, parallel: each thread scatters
		// into its own columns of T.
		outer.Body, sb.Body = sb.Body, []Node{outer}
		sb.Comment = strings.Replace(sb.Comment, "serial", "parallel over blocks of "+strings.TrimSuffix(outer.Var, ".blk"), 1)
	}
	for v, x := range fenv {
		env[v] = x
	}
	dst := &ir.Access{Tensor: st.Stmt.Tensor}
	for k, t := range f.targets {
		if t == nil {
			t = Var(st.Spatial[k].Name)
		}
		dst.Indices = append(dst.Indices, Subst(t, env))
	}
	var n Node = &Store{Dst: dst, Op: ir.Sum, Value: Subst(f.body, env), Atomic: atomic}
	var outerGuard, innerGuard []ir.Expr
	for _, g := range f.guard {
		if mentions(g, free) {
			innerGuard = append(innerGuard, g)
		} else {
			outerGuard = append(outerGuard, g)
		}
	}
	if g := ir.AndAll(innerGuard); g != nil {
		n = &If{Cond: Subst(g, env), Body: []Node{n}}
	}
	if inner != nil {
		innermost := inner
		for len(innermost.Body) == 1 {
			l, ok := innermost.Body[0].(*Loop)
			if !ok {
				break
			}
			innermost = l
		}
		innermost.Body = []Node{n}
		n = inner
	}
	if g := ir.AndAll(outerGuard); g != nil {
		n = &If{Cond: Subst(g, env), Body: []Node{n}}
	}
	if outer != nil {
		cur = &outer.Body
		for len(*cur) == 1 {
			l, ok := (*cur)[0].(*Loop)
			if !ok {
				break
			}
			cur = &l.Body
		}
	}
	*cur = append(*cur, n)
	if atomic {
		lp := sb.Body[0].(*Loop)
		lp.Parallel, lp.Collapse = true, len(names)
	}
	nest.Body = []Node{fb, sb}
}

// freeLoops builds the loops of the free axes of scatter f: free names
// them; inner is the chain of loops inside the guard, outermost first,
// the last free axis last (a lane loop, Vector, unless atomic); outer,
// when not nil, is a parallel loop over blocks of the last free axis
// (CPU scatters with at least 16 elements per block and two blocks), whose
// variable and the lane loop's make up the axis (fenv maps each free
// variable to its expression in the loops).
func freeLoops(st *ir.BoundStmt, f *scatterForm, atomic bool) (free map[string]int, outer, inner *Loop, fenv map[string]ir.Expr) {
	free, fenv = map[string]int{}, map[string]ir.Expr{}
	var axes []ir.Var
	for k, t := range f.targets {
		if t == nil {
			free[st.Spatial[k].Name] = k
			axes = append(axes, st.Spatial[k])
		}
	}
	var chain []*Loop
	for i, ax := range axes {
		lp := &Loop{Var: ax.Name, Extent: ax.Extent}
		fenv[ax.Name] = Var(ax.Name)
		if i == len(axes)-1 && !atomic {
			lp.Vector = true
			if blocks := scatterBlocks(ax.Extent); blocks > 1 {
				width := ax.Extent / blocks
				outer = &Loop{Var: ax.Name + ".blk", Extent: blocks, Parallel: true, Collapse: 1}
				lp = &Loop{Var: ax.Name + ".ln", Extent: width, Vector: true}
				fenv[ax.Name] = Add(Mul(Var(outer.Var), Lit(width)), Var(lp.Var))
			}
		}
		if ax.Extent == 1 {
			fenv[ax.Name] = Lit(0)
			continue
		}
		chain = append(chain, lp)
	}
	for i := 1; i < len(chain); i++ {
		chain[i-1].Body = []Node{chain[i]}
	}
	if len(chain) > 0 {
		inner = chain[0]
	}
	return free, outer, inner, fenv
}

// scatterBlocks is the number of parallel blocks a free axis of extent n
// splits into: the largest divisor of n up to 8 that leaves blocks of at
// least 16 elements, 1 when none does.
func scatterBlocks(n int64) int64 {
	for b := int64(8); b > 1; b-- {
		if n%b == 0 && n/b >= 16 {
			return b
		}
	}
	return 1
}

// constBool decides a condition from the variables' ranges alone:
// comparisons of index expressions whose ranges settle them, and !, &&
// and || of such. ok is false when the value depends on the point.
func constBool(e ir.Expr, ext map[string]int64) (val, ok bool) {
	switch e := e.(type) {
	case *ir.Unary:
		if e.Op == ir.Not {
			v, ok := constBool(e.X, ext)
			return !v, ok
		}
	case *ir.Binary:
		switch {
		case e.Op == ir.And || e.Op == ir.Or:
			x, okx := constBool(e.X, ext)
			y, oky := constBool(e.Y, ext)
			short := e.Op == ir.Or // the value that settles the operator
			switch {
			case okx && x == short, oky && y == short:
				return short, true
			case okx && oky:
				return !short, true
			}
		case e.Op.IsCompare():
			k := ir.KindMemo{}
			if k.Of(e.X) != ir.KindIndex || k.Of(e.Y) != ir.KindIndex {
				return false, false
			}
			x, okx := indexSpan(e.X, ext)
			y, oky := indexSpan(e.Y, ext)
			if !okx || !oky {
				return false, false
			}
			return compareSpans(e.Op, x, y)
		}
	}
	return false, false
}

// compareSpans decides x op y for every x in a and y in b, if it can.
func compareSpans(op ir.BinOp, a, b span) (val, ok bool) {
	switch op {
	case ir.Lt:
		return a.Hi < b.Lo, a.Hi < b.Lo || a.Lo >= b.Hi
	case ir.Le:
		return a.Hi <= b.Lo, a.Hi <= b.Lo || a.Lo > b.Hi
	case ir.Gt:
		return compareSpans(ir.Lt, b, a)
	case ir.Ge:
		return compareSpans(ir.Le, b, a)
	case ir.Eq, ir.Ne:
		disjoint := a.Hi < b.Lo || b.Hi < a.Lo
		same := a.Lo == a.Hi && b.Lo == b.Hi && a.Lo == b.Lo
		return same == (op == ir.Eq), same || disjoint
	}
	return false, false
}
