package autodiff

import (
	"fmt"

	"github.com/neoflow/neoflow/core/ir"
)

// builder holds the state of one Grad call.
type builder struct {
	spec   *ir.Spec
	fwd    *ir.Op
	dtype  ir.DType
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
}

func (b *builder) gname(t string) string {
	if n, ok := b.fwdName[t]; ok {
		return n
	}
	return t
}

func newBuilder(spec *ir.Spec, wrt []bool) (*builder, error) {
	op := spec.Op
	b := &builder{spec: spec, fwd: op, dtype: spec.DType, consts: op.Consts,
		shapes: map[string][]int64{}, tnames: nameSet{}, fwdName: map[string]string{}}
	for c := range op.Consts {
		b.tnames[c] = true
	}
	// The names the contract fixes: forward inputs, d_<output>, d_<input>.
	reserve := func(n, what string) error {
		if b.tnames[n] {
			return fmt.Errorf("autodiff: the gradient op needs the name %s for %s, but it is already taken "+
				"(by a forward input, another gradient or a constant); rename the forward tensor", n, what)
		}
		b.tnames[n] = true
		return nil
	}
	for _, in := range op.Inputs {
		if err := reserve(in, "a forward input"); err != nil {
			return nil, err
		}
	}
	for _, t := range spec.Outputs() {
		if err := reserve("d_"+t.Name, "the gradient of output "+t.Name); err != nil {
			return nil, err
		}
	}
	for i, in := range op.Inputs {
		if wrt[i] {
			if err := reserve("d_"+in, "the gradient of input "+in); err != nil {
				return nil, err
			}
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
			b.shapes["d_"+t.Name] = t.Shape
		}
	}
	for _, s := range op.Stmts {
		b.rhs = append(b.rhs, renameTensors(s.RHS, b.gname))
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
	// active: tensors on a path from a wrt input.
	active := map[string]bool{}
	for i, in := range op.Inputs {
		if wrt[i] {
			active[in] = true
		}
	}
	for _, s := range op.Stmts {
		for _, a := range accessesOf(s.RHS) {
			if active[a.Tensor] {
				active[s.Tensor] = true
			}
		}
	}
	gradName := map[string]string{}
	for _, s := range op.Stmts {
		switch {
		case isOutput[s.Tensor]:
			gradName[s.Tensor] = "d_" + s.Tensor
		case active[s.Tensor]:
			gradName[s.Tensor] = b.tnames.fresh("d_" + s.Tensor)
			b.shapes[gradName[s.Tensor]] = b.shapes[b.gname(s.Tensor)]
		}
	}
	for i, in := range op.Inputs {
		if wrt[i] {
			gradName[in] = "d_" + in
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
		if !isOutput[s.Tensor] {
			ps := parts[s.Tensor]
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
		R, aux, err := b.reduction(si, dY)
		if err != nil {
			return nil, err
		}
		made := 0
		for _, A := range reads {
			occs, err := occurrences(b.rhs[si], b.gname(A))
			if err != nil {
				return nil, err
			}
			for _, grp := range groupOccs(occs) {
				c := grp.contribution(R)
				if isZero(c) {
					continue
				}
				dst := b.tnames.fresh(fmt.Sprintf("%s_%d", gradName[A], len(parts[A])+1))
				b.shapes[dst] = b.shapes[b.gname(A)]
				g, err := b.gather(target{si: si, tensor: b.gname(A), fwdT: A, acc: grp.acc, contrib: c, dst: dst})
				if err != nil {
					return nil, err
				}
				g.note = fmt.Sprintf("from statement %d, %s", si+1, g.note)
				parts[A] = append(parts[A], g)
				made++
			}
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

// finish completes the gradient name of forward tensor t from its parts: a
// single part is renamed to name; several are summed by one '=' statement.
func (b *builder) finish(t, name string, ps []*gstmt) []*gstmt {
	if len(ps) == 1 {
		ps[0].s.Tensor = name
		ps[0].note = name + " " + ps[0].note
		return ps
	}
	for _, p := range ps {
		p.note = fmt.Sprintf("part of %s: %s %s", name, p.s.Tensor, p.note)
	}
	out := append([]*gstmt{}, ps...)
	vars := b.dimNames(t, len(b.shapes[b.gname(t)]))
	var ix []ir.Expr
	lhs := []*ir.Index{}
	ext := map[string]int64{}
	for d, v := range vars {
		ix = append(ix, idx(v))
		lhs = append(lhs, idx(v))
		ext[v] = b.shapes[b.gname(t)][d]
	}
	var sum ir.Expr
	for _, p := range ps {
		a := &ir.Access{Tensor: p.s.Tensor, Indices: ix}
		if sum == nil {
			sum = a
		} else {
			sum = bin(ir.Add, sum, a)
		}
	}
	return append(out, &gstmt{s: &ir.Stmt{Tensor: name, Indices: lhs, Reduce: ir.Assign, RHS: sum}, ext: ext,
		note: fmt.Sprintf("%s: sum of %d parts", name, len(ps))})
}

// zeroGrad is d_X = 0 for an input no derivative reaches.
func (b *builder) zeroGrad(in string) *gstmt {
	vars := b.dimNames(in, len(b.shapes[in]))
	lhs := []*ir.Index{}
	ext := map[string]int64{}
	for d, v := range vars {
		lhs = append(lhs, idx(v))
		ext[v] = b.shapes[in][d]
	}
	return &gstmt{s: &ir.Stmt{Tensor: "d_" + in, Indices: lhs, Reduce: ir.Assign, RHS: zero()}, ext: ext,
		note: "d_" + in + ": no derivative reaches " + in}
}

// recompute lists the forward statements the gradient statements read,
// transitively, in forward order, as statements of the gradient op.
func (b *builder) recompute(stmts []*gstmt) []*gstmt {
	writer := b.writers()
	needed := b.directReads(stmts, writer)
	for i := len(b.fwd.Stmts) - 1; i >= 0; i-- {
		if !needed[i] {
			continue
		}
		for _, a := range accessesOf(b.rhs[i]) {
			if j, ok := writer[a.Tensor]; ok {
				needed[j] = true
			}
		}
	}
	var out []*gstmt
	for i, bs := range b.spec.Stmts {
		if !needed[i] {
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

// forwardReads lists, by forward name and in forward order, the tensors of
// forward statements that the gradient statements read: what GradSaving
// takes as inputs.
func (b *builder) forwardReads(stmts []*gstmt) []string {
	needed := b.directReads(stmts, b.writers())
	var out []string
	for i, s := range b.fwd.Stmts {
		if needed[i] {
			out = append(out, s.Tensor)
		}
	}
	return out
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
