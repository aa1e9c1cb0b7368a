package autodiff

import (
	"fmt"

	"github.com/pkg/errors"

	"github.com/neoflow/neoflow/core/ir"
)

// indicator builds the always-correct fallback: the gather reduces over
// every variable of the forward statement and keeps the points where the
// read hits the gradient's index, dA[z] += where(f(x, r) == z, contrib, 0).
// core/loops lowers this shape as a serial scatter (see doc.go).
func (b *builder) indicator(t target, why string, simp bool) (*gstmt, error) {
	bs := b.spec.Stmts[t.si]
	taken := b.varTaken(bs)
	ext := map[string]int64{}
	var zs []*ir.Index
	var conds []ir.Expr
	for d, ix := range t.acc.Indices {
		n := taken.fresh(b.dimHint(t.fwdT, d))
		zs = append(zs, idx(n))
		ext[n] = b.shapes[t.tensor][d]
		conds = append(conds, bin(ir.Eq, ix, idx(n)))
	}
	var red []string
	for _, vs := range [][]ir.Var{bs.Spatial, bs.Reduction} {
		for _, v := range vs {
			red = append(red, v.Name)
			ext[v.Name] = v.Extent
		}
	}
	// The contribution's own guards go first: where(b > 0, d_O[b], 0.0)
	// keeps the read I[b - 1] of the condition I[b - 1] == e0 in bounds
	// when b > 0 is tested before it (&& evaluates its right side only
	// where its left side holds).
	guards, body := guardsOf(t.contrib)
	if conds = append(guards, conds...); len(conds) > 0 {
		body = where(ir.AndAll(conds), body, zero())
	}
	if simp {
		body = simplifyGuards(body, ext)
	}
	body, red, err := fixVars(body, red, ext, t.tensor, len(t.acc.Indices), b.rhs[t.si])
	if err != nil {
		return nil, err
	}
	g := &gstmt{s: &ir.Stmt{Tensor: t.dst, Indices: zs, Reduce: ir.Assign, RHS: body}, ext: ext}
	if len(red) > 0 {
		g.s.Reduce = ir.Sum
	}
	g.note = fmt.Sprintf("through %s (indicator fallback over the whole forward iteration space: %s)",
		ir.ExprString(t.acc), why)
	return g, nil
}

// fixVars makes every reduction variable of a gather legal for sema, which
// needs each variable inside some tensor access. A variable left only in
// guards (it selects how many points contribute, not what they add) gets
// a read in a branch that never runs, body + where(v < 0, A[v, 0, ...],
// 0.0), where A is the differentiated tensor; the condition names v, so
// sema infers no extent from that read and proves nothing under it (when
// A is a scalar, the read is of another tensor the body reads, else of one
// the forward right-hand side fwd reads; the extent then comes from the
// gradient op's Sizes). A variable used nowhere
// is summed out by scaling the body by its extent.
func fixVars(body ir.Expr, red []string, ext map[string]int64, tensor string, rank int, fwd ir.Expr) (ir.Expr, []string, error) {
	inAcc := accessVars(body)
	used := map[string]bool{}
	for _, v := range varsOf(body) {
		used[v] = true
	}
	var anchors ir.Expr
	var never []ir.Expr
	for _, v := range red {
		if inAcc[v] || !used[v] {
			continue
		}
		at, n := tensor, rank
		if n == 0 { // a scalar has no index to hold v: anchor it in another tensor the body reads
			at, n = anchorTensor(body)
			if n == 0 {
				at, n = anchorTensor(fwd)
			}
			if n == 0 {
				return nil, nil, errors.Errorf("index %s is used only in guards", v)
			}
		}
		a := &ir.Access{Tensor: at, Indices: []ir.Expr{idx(v)}}
		for range n - 1 {
			a.Indices = append(a.Indices, ilit(0))
		}
		anchors = addAnchor(anchors, a)
		never = append(never, bin(ir.Lt, idx(v), ilit(0)))
	}
	if anchors != nil {
		body = bin(ir.Add, body, where(ir.AndAll(never), anchors, zero()))
	}
	used = map[string]bool{}
	for _, v := range varsOf(body) {
		used[v] = true
	}
	scale := int64(1)
	var keep []string
	for _, v := range red {
		if used[v] {
			keep = append(keep, v)
			continue
		}
		p, err := mulChk(scale, ext[v])
		if err != nil || p > 1<<53 {
			return nil, nil, errors.Errorf("reduction over unused indices too large to scale")
		}
		scale = p
		delete(ext, v)
	}
	if scale != 1 {
		body = mul(body, flit(float64(scale)))
	}
	return body, keep, nil
}

// anchorTensor is a tensor of rank 1 or more that body reads, and its rank
// (0 when there is none).
func anchorTensor(body ir.Expr) (string, int) {
	for _, a := range accessesOf(body) {
		if len(a.Indices) > 0 {
			return a.Tensor, len(a.Indices)
		}
	}
	return "", 0
}

func addAnchor(acc, a ir.Expr) ir.Expr {
	if acc == nil {
		return a
	}
	return bin(ir.Add, acc, a)
}
