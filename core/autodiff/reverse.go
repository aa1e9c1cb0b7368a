package autodiff

import (
	"fmt"
	"slices"
	"strings"

	"github.com/pkg/errors"

	"github.com/neoflow/neoflow/core/ir"
)

// builder holds the state of one Grad call.
type builder struct {
	spec  *ir.Spec
	fwd   *ir.Op
	dtype ir.DType
	// ints are the integer inputs' element types (spec.IntInputs).
	ints   map[string]ir.DType
	consts map[string]*ir.Const
	// shapes of every tensor of the gradient op, by gradient-op name.
	shapes map[string][]int64
	// tnames are the taken tensor names (and constant names).
	tnames nameSet
	// fwdName maps a forward written tensor to its name in the gradient op
	// (renamed when it clashes with a gradient name).
	fwdName map[string]string
	// rhs are the forward right-hand sides with tensors renamed.
	rhs []ir.Expr
	// forceSNF skips Gauss-Jordan elimination, so that every quasi-affine
	// read is inverted through the Smith normal form (tests).
	forceSNF bool
	// memo memoizes kinds, tree sizes and structural ids by node, and
	// bounds the gradient's size (size.go).
	memo *memo
	// hints are the names dimHint gives the forward tensors' dimensions.
	hints map[dimKey]string
	// dOut and dIn name the gradient of each forward output and of each
	// selected input: d_X, or a fresh variant when d_X is taken.
	dOut, dIn map[string]string
}

func (b *builder) gname(t string) string {
	if n, ok := b.fwdName[t]; ok {
		return n
	}
	return t
}

// derivativeKind names the derivatives of each prefix in messages.
var derivativeKind = map[string]string{"d_": "gradient", "t_": "tangent"}

// newBuilder starts a derivation: prefix names the derivatives, "d_" for
// gradients (Grad), "t_" for tangents (Tangent).
func newBuilder(spec *ir.Spec, wrt []bool, prefix string) (*builder, error) {
	if spec == nil || spec.Op == nil {
		return nil, errors.Errorf("autodiff: nil spec")
	}
	op := spec.Op
	if len(wrt) != len(op.Inputs) {
		return nil, errors.Errorf("autodiff: wrt has %d entries but op %shas %d inputs (%s)",
			len(wrt), nameSpace(op), len(op.Inputs), strings.Join(op.Inputs, ", "))
	}
	if !slices.Contains(wrt, true) {
		return nil, errors.Errorf("autodiff: wrt selects no input: nothing to differentiate")
	}
	b := &builder{spec: spec, fwd: op, dtype: spec.DType, ints: spec.IntInputs(), consts: op.Consts,
		shapes: map[string][]int64{}, tnames: nameSet{}, fwdName: map[string]string{}, memo: newMemo(derivativeKind[prefix])}
	for c := range op.Consts {
		b.tnames[c] = true
	}
	// The names of the contract: the forward inputs keep theirs; the
	// gradient (tangent) of an output or input X is d_X (t_X), or d_X_1,
	// d_X_2, ... when that is taken (an op that names a tensor d_A, as a gradient op does,
	// is differentiated again).
	for _, in := range op.Inputs {
		if b.tnames[in] {
			return nil, errors.Errorf("autodiff: the forward input %s has the name of a constant", in)
		}
		b.tnames[in] = true
	}
	b.dOut, b.dIn = map[string]string{}, map[string]string{}
	for _, t := range spec.Outputs() {
		b.dOut[t.Name] = b.tnames.fresh(prefix + t.Name)
	}
	for i, in := range op.Inputs {
		if wrt[i] {
			if t, isInt := b.ints[in]; isInt {
				return nil, errors.Errorf("autodiff: input %s is an %s tensor, which has no %s", in, t, derivativeKind[prefix])
			}
			b.dIn[in] = b.tnames.fresh(prefix + in)
		}
	}
	for _, s := range op.Stmts {
		b.fwdName[s.Tensor] = s.Tensor
		if b.tnames[s.Tensor] {
			b.fwdName[s.Tensor] = b.tnames.fresh(s.Tensor + "_f")
		}
		b.tnames[b.fwdName[s.Tensor]] = true
	}
	for _, t := range spec.Tensors {
		b.shapes[b.gname(t.Name)] = t.Shape
		if t.Role == ir.RoleOutput {
			b.shapes[b.dOut[t.Name]] = t.Shape
		}
	}
	for _, s := range op.Stmts {
		b.rhs = append(b.rhs, ir.RenameTensors(s.RHS, b.gname))
	}
	return b, nil
}

// run performs reverse mode over the statements and assembles the op's
// statements (doc.go, "Reverse mode").
func (b *builder) run(wrt []bool) ([]*gstmt, error) {
	op, spec := b.fwd, b.spec
	isOutput := map[string]bool{}
	for _, t := range spec.Outputs() {
		isOutput[t.Name] = true
	}
	active := b.active(wrt)
	gradName := map[string]string{}
	for _, s := range op.Stmts {
		switch {
		case isOutput[s.Tensor]:
			gradName[s.Tensor] = b.dOut[s.Tensor]
		case active[s.Tensor]:
			gradName[s.Tensor] = b.tnames.fresh("d_" + s.Tensor)
			b.shapes[gradName[s.Tensor]] = b.shapes[b.gname(s.Tensor)]
		}
	}
	for i, in := range op.Inputs {
		if wrt[i] {
			gradName[in] = b.dIn[in]
		}
	}

	parts := map[string][]*gstmt{}
	var body []*gstmt
	for si := len(op.Stmts) - 1; si >= 0; si-- {
		s := op.Stmts[si]
		if !active[s.Tensor] {
			continue
		}
		dY := gradName[s.Tensor]
		switch ps := parts[s.Tensor]; {
		case isOutput[s.Tensor] && len(ps) > 0:
			// An output that later statements read: its gradient is the
			// caller's d_<Out> plus what those statements send back.
			total := b.tnames.fresh(dY + "_all")
			b.shapes[total] = b.shapes[b.gname(s.Tensor)]
			body = append(body, b.finish(s.Tensor, total, append(ps, b.callerPart(s.Tensor, dY)))...)
			dY = total
		case !isOutput[s.Tensor]:
			if len(ps) == 0 {
				continue // its gradient is zero
			}
			body = append(body, b.finish(s.Tensor, dY, ps)...)
		}
		var reads []string
		seen := map[string]bool{}
		for _, a := range accessesOf(s.RHS) {
			if active[a.Tensor] && !seen[a.Tensor] {
				seen[a.Tensor] = true
				reads = append(reads, a.Tensor)
			}
		}
		if len(reads) == 0 {
			continue
		}
		aux, made, err := b.statementParts(si, dY, reads, gradName, parts)
		if err != nil {
			return nil, err
		}
		// The parts themselves are placed by finish: a temporary's when its
		// writer is reached, an input's at the end.
		if made > 0 {
			body = append(body, aux...)
		}
	}

	// The gradients of the selected inputs come last, in input order: they
	// are the outputs, and nothing reads them.
	var final []*gstmt
	for i, in := range op.Inputs {
		if !wrt[i] {
			continue
		}
		if ps := parts[in]; len(ps) > 0 {
			final = append(final, b.finish(in, gradName[in], ps)...)
		} else {
			final = append(final, b.zeroGrad(in))
		}
	}
	return append(body, final...), nil
}

// active marks the tensors on a path from an input wrt selects.
func (b *builder) active(wrt []bool) map[string]bool {
	active := map[string]bool{}
	for i, in := range b.fwd.Inputs {
		if wrt[i] {
			active[in] = true
		}
	}
	for _, s := range b.fwd.Stmts {
		for _, a := range accessesOf(s.RHS) {
			if active[a.Tensor] {
				active[s.Tensor] = true
			}
		}
	}
	return active
}

// statementParts builds the gradient parts that statement si (its tensor's
// gradient is dY) contributes to the tensors it reads, appending them to
// parts; it returns the statements the reduction rule needs and how many
// parts it made. The contributions are all built, and their size charged
// against ir.MaxNodes, before any gather is built and checked.
func (b *builder) statementParts(si int, dY string, reads []string, gradName map[string]string, parts map[string][]*gstmt) ([]*gstmt, int, error) {
	R, aux, err := b.reduction(si, b.spatialRead(si, dY))
	if err != nil {
		return nil, 0, err
	}
	var targets []target
	var contribs []ir.Expr
	var names []string
	for _, A := range reads {
		names = append(names, b.gname(A))
	}
	occs, err := occurrences(b.rhs[si], names, b.memo)
	if err != nil {
		return nil, 0, err
	}
	for _, A := range reads {
		for _, grp := range groupOccs(occs[b.gname(A)]) {
			c := grp.contribution(R, b.memo)
			if ir.IsZero(c) {
				continue
			}
			targets = append(targets, target{si: si, tensor: b.gname(A), fwdT: A, acc: grp.acc, contrib: c})
			contribs = append(contribs, c)
		}
	}
	if err := b.memo.charge(b.fwd, si, contribs); err != nil {
		return nil, 0, err
	}
	for _, t := range targets {
		A := t.fwdT
		t.dst = b.tnames.fresh(fmt.Sprintf("%s_%d", gradName[A], len(parts[A])+1))
		b.shapes[t.dst] = b.shapes[t.tensor]
		g, err := b.gather(t)
		if err != nil {
			return nil, 0, err
		}
		g.note = fmt.Sprintf("from statement %d, %s", si+1, g.note)
		parts[A] = append(parts[A], g)
	}
	return aux, len(targets), nil
}

// spatialRead is t[x] over the spatial variables x of statement si.
func (b *builder) spatialRead(si int, t string) ir.Expr {
	acc := &ir.Access{Tensor: t}
	for _, v := range b.spec.Stmts[si].Spatial {
		acc.Indices = append(acc.Indices, idx(v.Name))
	}
	return acc
}

// finish completes the gradient name of forward tensor t from its parts: a
// single part is renamed to name; several are summed by one '=' statement.
func (b *builder) finish(t, name string, ps []*gstmt) []*gstmt {
	if len(ps) == 1 {
		ps[0].s.Tensor = name
		ps[0].note = name + " " + ps[0].note
		return ps
	}
	vars := b.dimNames(t, len(b.shapes[b.gname(t)]))
	var ix []ir.Expr
	lhs := []*ir.Index{}
	ext := map[string]int64{}
	for d, v := range vars {
		ix = append(ix, idx(v))
		lhs = append(lhs, idx(v))
		ext[v] = b.shapes[b.gname(t)][d]
	}
	var out []*gstmt
	var sum ir.Expr
	var inlined []string
	for _, p := range ps {
		term, ok := inlinePart(p, ix)
		if ok {
			inlined = append(inlined, p.note)
		} else {
			p.note = fmt.Sprintf("part of %s: %s %s", name, p.s.Tensor, p.note)
			out = append(out, p)
			term = &ir.Access{Tensor: p.s.Tensor, Indices: ix}
		}
		if sum == nil {
			sum = term
		} else {
			sum = bin(ir.Add, sum, term)
		}
	}
	note := fmt.Sprintf("%s: sum of %d parts", name, len(ps))
	if len(inlined) > 0 {
		note += fmt.Sprintf(", %d inlined: %s", len(inlined), strings.Join(inlined, "; "))
	}
	return append(out, &gstmt{s: &ir.Stmt{Tensor: name, Indices: lhs, Reduce: ir.Assign, RHS: sum}, ext: ext, note: note})
}

// inlinePart is the right-hand side of an elementwise part (an '='
// statement, whose variables are all on its left-hand side) over the
// indices ix, to be summed in place rather than stored in a temporary:
// a gradient with many parts (a sum of many shifted reads of one
// tensor) is then one statement, not one loop and one temporary per part.
func inlinePart(p *gstmt, ix []ir.Expr) (ir.Expr, bool) {
	if p.s.Reduce != ir.Assign || len(p.s.Indices) != len(ix) {
		return nil, false
	}
	sub := map[string]ir.Expr{}
	for d, v := range p.s.Indices {
		sub[v.Name] = ix[d]
	}
	for _, v := range varsOf(p.s.RHS) {
		if _, ok := sub[v]; !ok {
			return nil, false
		}
	}
	return ir.SubstIndex(p.s.RHS, sub), true
}

// callerPart is the part of an output's gradient that the caller gives,
// d_<Out> itself, as an elementwise part for finish to sum in.
func (b *builder) callerPart(t, dOut string) *gstmt {
	vars := b.dimNames(t, len(b.shapes[b.gname(t)]))
	lhs := []*ir.Index{}
	acc := &ir.Access{Tensor: dOut}
	ext := map[string]int64{}
	for d, v := range vars {
		lhs = append(lhs, idx(v))
		acc.Indices = append(acc.Indices, idx(v))
		ext[v] = b.shapes[b.gname(t)][d]
	}
	return &gstmt{s: &ir.Stmt{Indices: lhs, Reduce: ir.Assign, RHS: acc}, ext: ext, note: "the caller's gradient " + dOut}
}

// zeroGrad is d_X = 0 for an input no derivative reaches.
func (b *builder) zeroGrad(in string) *gstmt {
	return b.zeroStmt(b.dIn[in], in, b.dIn[in]+": no derivative reaches "+in)
}

// zeroStmt is name = 0 over the shape of forward tensor t.
func (b *builder) zeroStmt(name, t, note string) *gstmt {
	shape := b.shapes[b.gname(t)]
	vars := b.dimNames(t, len(shape))
	lhs := []*ir.Index{}
	ext := map[string]int64{}
	for d, v := range vars {
		lhs = append(lhs, idx(v))
		ext[v] = shape[d]
	}
	return &gstmt{s: &ir.Stmt{Tensor: name, Indices: lhs, Reduce: ir.Assign, RHS: zero()}, ext: ext, note: note}
}

// recompute lists the forward statements whose values the gradient
// statements stmts read, and the ones those read, transitively, as
// gradient statements writing the gradient-op names: what Grad recomputes.
func (b *builder) recompute(stmts []*gstmt) []*gstmt {
	writer := b.writers()
	needed := b.directReads(stmts, writer)
	for i := len(b.fwd.Stmts) - 1; i >= 0; i-- {
		if needed[i] {
			b.markReads(i, writer, needed)
		}
	}
	return b.forwardStmts(needed)
}

// markReads marks the forward statements writing what statement i reads.
func (b *builder) markReads(i int, writer map[string]int, needed map[int]bool) {
	for _, a := range accessesOf(b.rhs[i]) {
		if j, ok := writer[a.Tensor]; ok {
			needed[j] = true
		}
	}
}

// forwardStmts is the forward statements marked in which, in order, as
// gradient statements writing the gradient-op names.
func (b *builder) forwardStmts(which map[int]bool) []*gstmt {
	var out []*gstmt
	for i, bs := range b.spec.Stmts {
		if !which[i] {
			continue
		}
		s := *bs.Stmt
		s.Tensor = b.gname(s.Tensor)
		s.RHS = b.rhs[i]
		ext := map[string]int64{}
		for _, v := range bs.Spatial {
			ext[v.Name] = v.Extent
		}
		for _, v := range bs.Reduction {
			ext[v.Name] = v.Extent
		}
		out = append(out, &gstmt{s: &s, ext: ext, note: "recomputed forward statement"})
	}
	return out
}

// savedOrRecomputed splits the forward tensors the gradient statements
// stmts read into those GradSaving takes saved (by forward name, in
// forward order) and the statements it recomputes: those writing a tensor
// named in recompute that one forward statement writes whole, and, for
// what they read, the same again; recomputed maps each of their tensors'
// forward names to its gradient-op name (nil when none is).
func (b *builder) savedOrRecomputed(stmts []*gstmt, recompute map[string]bool) (saved []string, rec []*gstmt, recomputed map[string]string) {
	writer := b.writers()
	needed := b.directReads(stmts, writer)
	count := map[string]int{}
	for _, s := range b.fwd.Stmts {
		count[s.Tensor]++
	}
	which := map[int]bool{}
	for i := len(b.fwd.Stmts) - 1; i >= 0; i-- {
		bs := b.spec.Stmts[i]
		name := b.fwd.Stmts[i].Tensor
		if !needed[i] || !recompute[name] || count[name] != 1 || bs.Offset != nil {
			continue
		}
		which[i] = true
		if recomputed == nil {
			recomputed = map[string]string{}
		}
		recomputed[name] = b.gname(name)
		b.markReads(i, writer, needed)
	}
	for i, s := range b.fwd.Stmts {
		if needed[i] && !which[i] {
			saved = append(saved, s.Tensor)
		}
	}
	return saved, b.forwardStmts(which), recomputed
}

// writers maps the gradient-op name of each forward statement's tensor to
// the statement's index.
func (b *builder) writers() map[string]int {
	writer := map[string]int{}
	for i, s := range b.fwd.Stmts {
		writer[b.gname(s.Tensor)] = i
	}
	return writer
}

// directReads marks the forward statements whose tensors stmts read.
func (b *builder) directReads(stmts []*gstmt, writer map[string]int) map[int]bool {
	needed := map[int]bool{}
	for _, g := range stmts {
		for _, a := range accessesOf(g.s.RHS) {
			if i, ok := writer[a.Tensor]; ok {
				needed[i] = true
			}
		}
	}
	return needed
}
