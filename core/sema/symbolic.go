package sema

import (
	"strings"

	"github.com/pkg/errors"

	"github.com/neoflow/neoflow/core/bounds"
	"github.com/neoflow/neoflow/core/ir"
)

// ProveSymbolic proves every access of spec in bounds for every value of
// the size variables, not only for the shapes spec was specialized at: the
// step toward one kernel for every batch size or sequence length.
//
// dims marks the inputs' symbolic dimensions: dims[input][d] names the
// size variable of dimension d, "" (or a missing entry) leaves it fixed.
// The spec's shapes are one value of each size variable (the
// representative sizes); least[s] is the least value size variable s may
// take (1 when least does not say). A statement's variable whose extent
// is a size variable's representative value and that indexes a dimension
// of that size plainly (X[n, c] with n over a batch s) takes that size
// variable as its extent; the dimensions a statement writes follow from
// its left-hand side, so a later statement's reads of them are symbolic
// too. Each access is then proven below its dimension, an index
// expression over size variables, with the guards' facts
// (bounds.WithinSize), and every index arithmetic free of overflow for
// sizes up to bounds.MaxSize.
//
// vary, when not nil, names per statement more variables that run to a
// size (vary[i][v] is v's size variable): those whose extent differs
// between two specializations, such as a gradient's variable that only
// its left-hand side and inverted reads use.
//
// An access that the facts do not prove for every size but whose index and
// dimension are linear in the loop and size variables gets launch guards
// instead (bounds.GuardsWithin): conditions on the sizes alone, such as
// $s1 - $s0 - 2 >= 0, under which it is in bounds at every point, which
// the kernel checks at each launch.
//
// It returns, per statement, the variables of symbolic extent with their
// size variables, and the guards (their size variables named "$s"). An
// error names the first access it can neither prove nor guard for every
// size. spec must be unfused (no statement writes part of a tensor).
func ProveSymbolic(spec *ir.Spec, dims map[string][]string, least map[string]int64, vary []map[string]string) ([]map[string]string, []bounds.Guard, error) {
	op := spec.Op
	tdims, rep, err := inputDims(spec, dims)
	if err != nil {
		return nil, nil, err
	}
	leastOf := map[string]int64{}
	for s := range rep {
		leastOf[s] = 1 // every size variable is a variable of the proof
	}
	for s, lo := range least {
		leastOf[sizeVar(s)] = lo
	}
	var out []map[string]string
	var guards []bounds.Guard
	for i, bs := range spec.Stmts {
		if bs.Offset != nil {
			return nil, nil, errors.Errorf("symbolic extents: statement writing %s writes part of its tensor (a fused spec)", bs.Stmt.Tensor)
		}
		sym := symbolicVars(bs, tdims, rep)
		if i < len(vary) {
			for v, size := range vary[i] {
				sym[v] = sizeVar(size)
			}
		}
		ext := map[string]int64{}
		var lhs []ir.Expr
		for _, v := range bs.Spatial {
			if s, ok := sym[v.Name]; ok {
				lhs = append(lhs, &ir.Index{Name: s})
			} else {
				ext[v.Name] = v.Extent
				lhs = append(lhs, &ir.IntLit{Value: v.Extent})
			}
		}
		for _, v := range bs.Reduction {
			if _, ok := sym[v.Name]; !ok {
				ext[v.Name] = v.Extent
			}
		}
		p := &prover{op: op, info: bounds.NewInfo(), dims: tdims}
		if err := p.expr(bs.Stmt.RHS, bounds.ForSymbolicExtents(ext, sym, leastOf)); err != nil {
			return nil, nil, err
		}
		guards = append(guards, p.guards...)
		tdims[bs.Stmt.Tensor] = lhs
		named := map[string]string{}
		for v, s := range sym {
			named[v] = s[1:]
		}
		out = append(out, named)
	}
	return out, guards, nil
}

// sizeVar is the name size variable s has in the proof: "$s", which no
// index variable of a statement can have.
func sizeVar(s string) string { return "$" + s }

// inputDims is each input's dimensions as index expressions (a size
// variable, or the fixed extent), and the representative value of each
// size variable, which every dimension it names must have.
func inputDims(spec *ir.Spec, dims map[string][]string) (map[string][]ir.Expr, map[string]int64, error) {
	tdims := map[string][]ir.Expr{}
	rep := map[string]int64{}
	for _, t := range spec.InputsDecl() {
		names := dims[t.Name]
		if len(names) > len(t.Shape) {
			return nil, nil, errors.Errorf("symbolic extents: input %s has %d dimensions, %d are named", t.Name, len(t.Shape), len(names))
		}
		for d, n := range t.Shape {
			if d >= len(names) || names[d] == "" {
				tdims[t.Name] = append(tdims[t.Name], &ir.IntLit{Value: n})
				continue
			}
			s := sizeVar(names[d])
			if r, ok := rep[s]; ok && r != n {
				return nil, nil, errors.Errorf("symbolic extents: size %s is %d in one dimension and %d in dimension %d of %s", names[d], r, n, d, t.Name)
			}
			rep[s] = n
			tdims[t.Name] = append(tdims[t.Name], &ir.Index{Name: s})
		}
	}
	return tdims, rep, nil
}

// symbolicVars maps the variables of bs that read a symbolic dimension
// plainly, with that size's representative value as their extent, to the
// size variable.
func symbolicVars(bs *ir.BoundStmt, tdims map[string][]ir.Expr, rep map[string]int64) map[string]string {
	extent := map[string]int64{}
	for _, v := range bs.Vars() {
		extent[v.Name] = v.Extent
	}
	sym := map[string]string{}
	ir.Walk(bs.Stmt.RHS, func(e ir.Expr) bool {
		a, ok := e.(*ir.Access)
		if !ok {
			return true
		}
		for d, x := range a.Indices {
			v, plain := x.(*ir.Index)
			if !plain || d >= len(tdims[a.Tensor]) {
				continue
			}
			if s, isSize := tdims[a.Tensor][d].(*ir.Index); isSize && extent[v.Name] == rep[s.Name] {
				sym[v.Name] = s.Name
			}
		}
		return true
	})
	return sym
}

// accessSymbolic proves each index of e below its dimension for every
// value of the size variables, or for those that meet the launch guards it
// adds (ProveSymbolic).
func (p *prover) accessSymbolic(e *ir.Access, sc *bounds.Scope) error {
	for d, x := range e.Indices {
		if ir.IsIndirect(x) {
			continue
		}
		size := p.dims[e.Tensor][d]
		low, high := sc.WithinSize(x, size)
		if low && high {
			continue
		}
		if gs, ok := sc.GuardsWithin(x, size, !low, !high); ok {
			p.guards = append(p.guards, gs...)
			continue
		}
		return p.op.Errorf(e.Pos, "access %s may be out of bounds for some sizes: dimension %d index %s is neither proven nor guarded within [0, %s)",
			ir.ExprString(e), d, ir.ExprString(x), strings.ReplaceAll(ir.ExprString(size), "$", "size "))
	}
	return nil
}
