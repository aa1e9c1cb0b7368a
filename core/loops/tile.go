package loops

import (
	"fmt"
	"strings"

	"github.com/pkg/errors"

	"github.com/neoflow/neoflow/core/ir"
)

// MaxLocalElems caps the size of a tiled schedule's local accumulator, so
// that it fits on any thread's stack (64 KiB of float32).
const MaxLocalElems = 1 << 14

// Tiling is the tiled lowering of a gather statement (Schedule.Tiling):
// every axis, spatial or reduction, is split into tile loops, the tile
// loops are ordered freely, and a reduction accumulates into a local
// buffer placed at a chosen depth. See the package doc.
type Tiling struct {
	// Splits gives the tile factors of the axes that are split, each axis
	// at most once: axis a of extent E with factors f1..fk becomes the
	// loops a.t0, ..., a.tk of extents E/(f1*...*fk), f1, ..., fk, and
	// a = a.t0*f1*...*fk + a.t1*f2*...*fk + ... + a.tk. The product of
	// the factors must divide E, with one exception, the lane remainder:
	// when the axis's last loop a.tk is the lane loop (Vector, innermost)
	// and every factor but fk is 1, fk may leave a remainder R = E mod fk
	// (fk < E). a.t0 then runs E/fk (rounded down) times, and a copy of
	// its body follows it with a.t0 fixed to E/fk and every a.tk loop
	// (the lane loop, a pack's copy loop) cut to R. a.t0 must not run in
	// parallel; for a spatial lane axis it must lie outside the
	// accumulator (before AccAt), for a reduction lane axis inside it
	// (at AccAt or later); a pack placed outside a.t0 must not read the
	// axis. An axis not listed is one loop named after the axis.
	Splits []Split
	// Loops lists every tile loop (TileLoops names them), outermost first.
	Loops []string
	// Parallel is how many outermost loops of Loops are distributed over
	// threads as one collapsed loop; they must be spatial.
	Parallel int
	// Vector makes the innermost loop a lane loop (omp simd). A spatial
	// lane loop writes one accumulator (or output) element per lane. A
	// reduction lane loop must lie inside the accumulator (AccAt <
	// len(Loops)); the accumulator then keeps one partial result per
	// lane, and the lanes are combined after the reduction (rfactor).
	Vector bool
	// Unroll gives unroll factors of loops.
	Unroll []Unroll
	// AccAt is the position in Loops at which a reduction's local
	// accumulator is declared: it holds one element per iteration of the
	// spatial loops at positions AccAt and later, and the reduction loops
	// at those positions accumulate into it. Reduction loops before AccAt
	// make the accumulator partial: the output is first filled with the
	// identity and each partial result is combined into it. AccAt ==
	// len(Loops) means no accumulator: the statement combines straight
	// into the output. Ignored for '=' statements.
	AccAt int
	// Packs copies reads into local buffers (see Pack).
	Packs []Pack
	// Relayouts copies whole tensors into buffers with one dimension
	// moved innermost (see Relayout).
	Relayouts []Relayout
	// Prefetch, above 0, prefetches the rows that reads through an index
	// tensor gather along the lane axis (LUT[I[b, k], d], lanes over d)
	// that many iterations of the index tensor ahead, at the top of the
	// loop just outside the lane loop (see prefetchRows).
	Prefetch int64
}

// Split is one axis's tile factors, outermost first.
type Split struct {
	Axis    string
	Factors []int64
	// Size, in a kernel with symbolic extents, names the size variable
	// (with SizePrefix) the axis runs to. Every factor but the last must
	// then be 1, and the last, f, need not divide the extent: the outer
	// loop runs to Size / f (Loop.By), and a copy of its body follows it
	// with the outer loop fixed to Size / f and the last level's loop cut
	// to Size % f (Loop.Rem), at every value of the size, so that the
	// lowering has one structure for every size. The outer loop must not
	// run in parallel, must lie outside the accumulator, and the last
	// level must not be the lane loop. Only the tiled lowering (Tiling)
	// takes it.
	Size string
}

// Unroll is an unroll factor for one loop.
type Unroll struct {
	Loop   string
	Factor int
}

// String is the tiling as Dump prints it.
func (t *Tiling) String() string {
	var b strings.Builder
	writeTiles(&b, "tiled", t.Splits, t.Loops, t.Parallel, t.AccAt, t.Vector)
	for _, u := range t.Unroll {
		fmt.Fprintf(&b, " unroll %s:%d", u.Loop, u.Factor)
	}
	for _, p := range t.Packs {
		fmt.Fprintf(&b, " pack %d@%d", p.Read, p.At)
	}
	for _, r := range t.Relayouts {
		fmt.Fprintf(&b, " relayout %s:%d", r.Tensor, r.Dim)
	}
	if t.Prefetch > 0 {
		fmt.Fprintf(&b, " prefetch %d", t.Prefetch)
	}
	return b.String()
}

// writeTiles writes what a tiling and a group tiling print alike: kind,
// the splits, the loops, the parallel loops, the accumulator position(s)
// and the lane mark.
func writeTiles(b *strings.Builder, kind string, splits []Split, loops []string, parallel int, acc any, vector bool) {
	b.WriteString(kind)
	for _, s := range splits {
		fmt.Fprintf(b, " %s%v", s.Axis, s.Factors)
		if s.Size != "" {
			b.WriteString("@" + s.Size)
		}
	}
	fmt.Fprintf(b, " loops [%s] parallel %d acc %v", strings.Join(loops, " "), parallel, acc)
	if vector {
		b.WriteString(" vector")
	}
}

// Check reports why t is not a valid tiling of st, a statement of spec
// (nil when it is), as lowering would.
func (t *Tiling) Check(spec *ir.Spec, st *ir.BoundStmt) error {
	if t.Prefetch < 0 || t.Prefetch > 1<<20 {
		return errors.Errorf("prefetch distance %d: want 0 to %d", t.Prefetch, 1<<20)
	}
	ord, err := t.resolve(st)
	if err != nil {
		return err
	}
	packs, err := planPacks(st, t, ord, tileEnv(st, ord))
	if err != nil {
		return err
	}
	_, err = planRelayouts(spec, st, t, sharedPackElems(packs))
	return err
}

// resolve checks t against st and returns its loops in t.Loops order.
func (t *Tiling) resolve(st *ir.BoundStmt) ([]tileLoop, error) {
	all, err := tileLoops(st, t.Splits)
	if err != nil {
		return nil, err
	}
	if len(all) == 0 {
		return nil, errors.New("a statement without loops has nothing to tile")
	}
	byName := map[string]tileLoop{}
	for _, l := range all {
		byName[l.name] = l
	}
	if len(t.Loops) != len(all) {
		return nil, errors.Errorf("loops %v do not list the %d tile loops %v", t.Loops, len(all), TileLoops(st, t.Splits))
	}
	ord := make([]tileLoop, len(t.Loops))
	seen := map[string]bool{}
	for i, n := range t.Loops {
		l, ok := byName[n]
		if !ok || seen[n] {
			return nil, errors.Errorf("loops %v are not a permutation of the tile loops %v", t.Loops, TileLoops(st, t.Splits))
		}
		seen[n] = true
		ord[i] = l
	}
	if t.Parallel < 0 || t.Parallel > len(ord) {
		return nil, errors.Errorf("parallel %d out of range [0, %d]", t.Parallel, len(ord))
	}
	for _, l := range ord[:t.Parallel] {
		if !l.spatial {
			return nil, errors.Errorf("parallel loop %s is a reduction loop", l.name)
		}
	}
	if t.Vector && len(ord) == 0 {
		return nil, errors.New("vector: no loops")
	}
	laneRed := t.Vector && !ord[len(ord)-1].spatial
	if laneRed && (st.Stmt.Reduce == ir.Assign || t.AccAt >= len(ord)) {
		return nil, errors.New("vector: the innermost loop is a reduction loop outside a local accumulator")
	}
	if err := t.checkRemainder(st, ord); err != nil {
		return nil, err
	}
	for _, u := range t.Unroll {
		if !seen[u.Loop] || u.Factor < 1 {
			return nil, errors.Errorf("unroll %s by %d: no such loop or factor < 1", u.Loop, u.Factor)
		}
	}
	if st.Stmt.Reduce != ir.Assign {
		if t.AccAt < t.Parallel || t.AccAt > len(ord) {
			return nil, errors.Errorf("accumulator position %d out of range [%d, %d]", t.AccAt, t.Parallel, len(ord))
		}
		n := accLen(ord[min(t.AccAt, len(ord)):])
		if laneRed {
			n *= ord[len(ord)-1].extent
		}
		if n > MaxLocalElems {
			return nil, errors.Errorf("local accumulator of %d elements exceeds %d", n, MaxLocalElems)
		}
	}
	return ord, nil
}

func accLen(ls []tileLoop) int64 {
	n := int64(1)
	for _, l := range ls {
		if l.spatial {
			n *= l.extent
		}
	}
	return n
}

// lowerTiled builds the nest of statement st under tiling t (checked).
func lowerTiled(spec *ir.Spec, nest *Nest, t *Tiling) error {
	ord, err := t.resolve(nest.Stmt)
	if err != nil {
		return err
	}
	if err := buildTiled(spec, nest, t, ord); err != nil {
		return err
	}
	if t.Prefetch > 0 && len(ord) >= 2 {
		prefetchRows(spec, nest, t.Prefetch, ord)
	}
	if i, ok := remainderLoop(ord); ok {
		o, lane := ord[i], ord[len(ord)-1]
		nest.Body = peelRemainder(nest.Body, o, lane, remainderLanes(nest.Stmt, t, ord) > 0)
	}
	if o, last, ok := sizedLoops(ord); ok { // after the lane remainder, which its copy then holds
		nest.Body = peelSized(nest.Body, o, last)
		nest.SizeValues = map[string]int64{o.size: o.extent*o.by + o.rem}
	}
	return nil
}

// buildTiled appends the nest of statement st under tiling t (resolved to
// ord) to nest.Body; a lane remainder is left to peelRemainder.
func buildTiled(spec *ir.Spec, nest *Nest, t *Tiling, ord []tileLoop) error {
	st := nest.Stmt
	tl, relayouts, err := newTiler(spec, st, t, ord)
	if err != nil {
		return err
	}
	red := st.Stmt.Reduce != ir.Assign
	accAt := len(ord)
	if red {
		accAt = t.AccAt
	}
	partial := false
	for _, l := range ord[:accAt] {
		partial = partial || (!l.spatial && l.extent > 1)
	}
	body := &nest.Body
	for i := range relayouts {
		relayouts[i].emit(body)
	}
	if red && (partial || accAt == len(ord)) {
		emitIdentityFill(spec, st, body)
		partial = true
	}
	cur := tiledOuterLoops(tl, body, t, ord, accAt)
	rhs := useRelayouts(usePacks(Subst(st.Stmt.RHS, tl.env), tl.packs), relayouts)
	if !red || accAt == len(ord) {
		*cur = append(*cur, &Store{Dst: tl.out(), Op: st.Stmt.Reduce, Value: rhs})
		return nil
	}
	tiledAccumulate(tl, st, cur, t, ord, accAt, partial, rhs)
	return nil
}

// newTiler sets up the tiled lowering of st under t (resolved to ord):
// the axis expressions, the unroll factors, the packs and the relayouts.
func newTiler(spec *ir.Spec, st *ir.BoundStmt, t *Tiling, ord []tileLoop) (*tiler, []relayoutPlan, error) {
	var err error
	env := tileEnv(st, ord)
	unroll := map[string]int{}
	for _, u := range t.Unroll {
		unroll[u.Loop] = u.Factor
	}
	tl := &tiler{st: st, env: env, unroll: unroll, vector: t.Vector, last: ord[len(ord)-1].name}
	if tl.packs, err = planPacks(st, t, ord, env); err != nil {
		return nil, nil, err
	}
	relayouts, err := planRelayouts(spec, st, t, sharedPackElems(tl.packs))
	if err != nil {
		return nil, nil, err
	}
	return tl, relayouts, nil
}

// emitIdentityFill appends to *body the nest that fills st's output with
// the identity of its reduction, before partial results combine into it.
func emitIdentityFill(spec *ir.Spec, st *ir.BoundStmt, body *[]Node) {
	fill := &lowerer{st: identityStmt(st), env: map[string]ir.Expr{}}
	b := &Block{Comment: "identity fill"}
	fs := defaultSchedule(spec, fill.st)
	fill.build(&b.Body, fs)
	if fs.ParallelDepth > 0 {
		fill.chain[0].Parallel, fill.chain[0].Collapse = true, fs.ParallelDepth
	}
	*body = append(*body, b)
}

// tiledOuterLoops appends the tile loops before the accumulator, ord[:accAt],
// with their packs, collapses the parallel ones into one, and returns the
// innermost body.
func tiledOuterLoops(tl *tiler, body *[]Node, t *Tiling, ord []tileLoop, accAt int) *[]Node {
	cur := body
	var par []*Loop
	for i, l := range ord[:accAt] {
		tl.emitPacks(cur, i)
		lp := tl.loop(cur, l)
		if lp != nil {
			if i < t.Parallel {
				par = append(par, lp)
			}
			cur = &lp.Body
		}
	}
	collapseParallel(par)
	return cur
}

// tiledAccumulate appends to *cur the local accumulator of a reduction and
// the loops at and after accAt: the accumulator's identity fill, the
// reduction into it, and the store (or combination, when partial) of the
// result into the output, the lanes combined first for a reduction lane
// loop.
func tiledAccumulate(tl *tiler, st *ir.BoundStmt, cur *[]Node, t *Tiling, ord []tileLoop, accAt int, partial bool, rhs ir.Expr) {
	inner := ord[accAt:]
	var sp []tileLoop
	for _, l := range inner {
		if l.spatial && l.extent > 1 {
			sp = append(sp, l)
		}
	}
	// With a reduction lane loop (rfactor), the accumulator holds lanes
	// partial results per element, lane innermost, and laneIdx picks one.
	lane := ord[len(ord)-1]
	lanes, laneIdx := int64(1), Lit(0)
	if t.Vector && !lane.spatial && lane.extent > 1 {
		lanes, laneIdx = lane.extent, Var(lane.name)
	}
	n := accLen(sp) * lanes
	idx := loopIndex(sp, lanes)
	local := func(name string) func(l ir.Expr) *ir.Access {
		return func(l ir.Expr) *ir.Access {
			a := &ir.Access{Tensor: name}
			if n > 1 {
				a.Indices = []ir.Expr{Add(idx, l)}
			}
			return a
		}
	}
	acc, rem := local(accName), local(remName)
	remLanes := remainderLanes(st, t, ord)
	*cur = append(*cur, &Local{Name: accName, Len: n})
	identity := &ir.FloatLit{Value: Identity(st.Stmt.Reduce)}
	fills := []Node{&Store{Dst: acc(laneIdx), Op: ir.Assign, Value: identity}}
	if remLanes > 0 {
		*cur = append(*cur, &Local{Name: remName, Len: n})
		fills = append(fills, &Store{Dst: rem(laneIdx), Op: ir.Assign, Value: identity})
	}
	c := tl.nestOver(cur, sp)
	if lanes > 1 {
		fills = []Node{&Loop{Var: lane.name, Extent: lanes, Vector: true, Body: fills}}
	}
	*c = append(*c, fills...)
	c = cur
	for i, l := range inner {
		tl.emitPacks(c, accAt+i)
		if lp := tl.loop(c, l); lp != nil {
			c = &lp.Body
		}
	}
	*c = append(*c, &Store{Dst: acc(laneIdx), Op: st.Stmt.Reduce, Value: rhs})
	c = tl.nestOver(cur, sp)
	op := ir.Assign
	if partial {
		op = st.Stmt.Reduce
	}
	var result ir.Expr = acc(Lit(0))
	if lanes > 1 {
		red := combineLanes(c, st.Stmt.Reduce, lane.axis+".h", lanes, func(h ir.Expr) ir.Expr { return acc(h) })
		if remLanes > 0 {
			hr := lane.axis + ".hr"
			*c = append(*c, &Loop{Var: hr, Extent: remLanes, Body: []Node{&Store{Dst: red, Op: st.Stmt.Reduce, Value: rem(Var(hr))}}})
		}
		result = red
	}
	*c = append(*c, &Store{Dst: tl.out(), Op: op, Value: result})
}

// rowMajor is the offset of element idx in a row-major buffer of extents
// ext whose innermost index steps by inner elements.
func rowMajor(idx []ir.Expr, ext []int64, inner int64) ir.Expr {
	out := Lit(0)
	stride := inner
	for i := len(idx) - 1; i >= 0; i-- {
		out = Add(out, Mul(idx[i], Lit(stride)))
		stride *= ext[i]
	}
	return out
}

// loopIndex is rowMajor over the variables of the loops ls.
func loopIndex(ls []tileLoop, inner int64) ir.Expr {
	idx, ext := make([]ir.Expr, len(ls)), make([]int64, len(ls))
	for i, l := range ls {
		idx[i], ext[i] = Var(l.name), l.extent
	}
	return rowMajor(idx, ext, inner)
}

// tileEnv maps each axis of st to its expression in the tile loops.
func tileEnv(st *ir.BoundStmt, ord []tileLoop) map[string]ir.Expr {
	env := map[string]ir.Expr{}
	for _, ax := range st.Vars() {
		e := Lit(0)
		for _, l := range ord {
			if l.axis == ax.Name && (l.extent > 1 || l.rem > 0 || l.sizedOuter()) {
				e = Add(e, Mul(Var(l.name), Lit(l.stride)))
			}
		}
		env[ax.Name] = e
	}
	return env
}

// tiler holds the state of one tiled lowering.
type tiler struct {
	st     *ir.BoundStmt
	env    map[string]ir.Expr
	unroll map[string]int
	vector bool
	last   string // the innermost loop
	packs  []packPlan
}

// emitPacks appends the packs placed before the loop at position at.
func (t *tiler) emitPacks(body *[]Node, at int) {
	for i := range t.packs {
		if t.packs[i].at == at {
			t.packs[i].emit(body, t)
		}
	}
}

// loop appends loop l to *body; it returns nil for a loop of extent 1,
// whose variable the axis expressions already omit (unless it has a
// remainder to peel).
func (t *tiler) loop(body *[]Node, l tileLoop) *Loop {
	if l.extent == 1 && l.rem == 0 && !l.sizedOuter() {
		return nil
	}
	lp := &Loop{Var: l.name, Extent: l.extent, Unroll: t.unroll[l.name], Vector: t.vector && l.name == t.last}
	if l.sizedOuter() {
		lp.Size, lp.By = l.size, l.by
	}
	*body = append(*body, lp)
	return lp
}

// nestOver appends the loops ls around an empty body and returns it.
func (t *tiler) nestOver(body *[]Node, ls []tileLoop) *[]Node {
	for _, l := range ls {
		if lp := t.loop(body, l); lp != nil {
			body = &lp.Body
		}
	}
	return body
}

func (t *tiler) out() *ir.Access {
	return outAccess(t.st, t.env)
}

// identityStmt is T[z...] = identity of st's reduction.
func identityStmt(st *ir.BoundStmt) *ir.BoundStmt {
	f := fillStmt(st)
	f.Stmt.RHS = &ir.FloatLit{Value: Identity(st.Stmt.Reduce)}
	return f
}
