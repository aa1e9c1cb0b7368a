package sema

import (
	"github.com/pkg/errors"

	"github.com/neoflow/neoflow/core/ir"
)

// CheckSpec verifies a specialized op as the passes leave it (the IR check
// NEOFLOW_CHECK=1 runs after every pass): every tensor a statement names is
// declared, each statement's axes are those its left-hand side and
// right-hand side use, with positive extents, the box it writes (offset
// and extents) lies in its tensor, and every access is still proven in
// bounds for those extents. An error names the statement and what is
// wrong; any is a neoflow bug in the pass that ran last.
func CheckSpec(spec *ir.Spec) error {
	shapes := map[string][]int64{}
	for _, t := range spec.Tensors {
		if _, dup := shapes[t.Name]; dup {
			return errors.Errorf("tensor %s is declared twice", t.Name)
		}
		shapes[t.Name] = t.Shape
	}
	for i, bs := range spec.Stmts {
		if err := checkBound(spec, bs, shapes); err != nil {
			return errors.Wrapf(err, "statement %d (%s)", i+1, ir.StmtString(bs.Stmt))
		}
	}
	return nil
}

// checkBound checks one statement of CheckSpec.
func checkBound(spec *ir.Spec, bs *ir.BoundStmt, shapes map[string][]int64) error {
	s := bs.Stmt
	shape, ok := shapes[s.Tensor]
	if !ok {
		return errors.Errorf("it writes %s, which is not declared", s.Tensor)
	}
	if len(bs.Spatial) != len(s.Indices) || len(shape) != len(s.Indices) && len(shape) != 1 {
		return errors.Errorf("%d spatial axes for %d indices of a tensor of rank %d", len(bs.Spatial), len(s.Indices), len(shape))
	}
	ext := map[string]int64{}
	for d, v := range bs.Spatial {
		if v.Name != s.Indices[d].Name || v.Extent < 1 {
			return errors.Errorf("spatial axis %d is %s < %d, the left-hand side says %s", d, v.Name, v.Extent, s.Indices[d].Name)
		}
		if d < len(shape) && len(s.Indices) == len(shape) && bs.OffsetAt(d)+v.Extent > shape[d] {
			return errors.Errorf("it writes [%d, %d) of dimension %d of %s, which has size %d",
				bs.OffsetAt(d), bs.OffsetAt(d)+v.Extent, d, s.Tensor, shape[d])
		}
		ext[v.Name] = v.Extent
	}
	for _, v := range bs.Reduction {
		if v.Extent < 1 {
			return errors.Errorf("reduction axis %s has extent %d", v.Name, v.Extent)
		}
		ext[v.Name] = v.Extent
	}
	for _, v := range varNames(s.RHS) {
		if _, ok := ext[v]; !ok {
			return errors.Errorf("index %s has no axis", v)
		}
	}
	var missing error
	ir.Walk(s.RHS, func(e ir.Expr) bool {
		if a, ok := e.(*ir.Access); ok && missing == nil {
			if _, ok := shapes[a.Tensor]; !ok {
				missing = errors.Errorf("it reads %s, which is not declared", a.Tensor)
			}
		}
		return missing == nil
	})
	if missing != nil {
		return missing
	}
	return proveBounds(spec.Op, s, ext, shapes)
}
