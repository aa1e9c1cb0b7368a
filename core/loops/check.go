package loops

import (
	"github.com/pkg/errors"

	"github.com/neoflow/neoflow/core/ir"
)

// checkSpec verifies the structural facts lowering relies on; sema has
// proven the rest (bounds, kinds).
func checkSpec(spec *ir.Spec) error {
	if spec == nil || spec.Op == nil {
		return errors.New("nil spec")
	}
	if spec.DType.Size() == 0 {
		return errors.Errorf("unsupported dtype %v", spec.DType)
	}
	if len(spec.Stmts) == 0 {
		return errors.New("spec has no statements")
	}
	seen := map[string]bool{}
	for _, t := range spec.Tensors {
		if t == nil || t.Name == "" || IsLocal(t.Name) || seen[t.Name] {
			return errors.Errorf("bad or duplicate tensor %v", t)
		}
		seen[t.Name] = true
		for _, d := range t.Shape {
			if d < 0 {
				return errors.Errorf("tensor %s has negative extent in shape %v", t.Name, t.Shape)
			}
		}
	}
	for i, st := range spec.Stmts {
		if err := checkStmt(spec, st); err != nil {
			return errors.Wrapf(err, "statement %d", i)
		}
	}
	return nil
}

func checkStmt(spec *ir.Spec, st *ir.BoundStmt) error {
	if st == nil || st.Stmt == nil {
		return errors.New("nil statement")
	}
	s := st.Stmt
	out := spec.Tensor(s.Tensor)
	if out == nil {
		return errors.Errorf("tensor %s is not declared", s.Tensor)
	}
	if out.Role == ir.RoleInput {
		return errors.Errorf("statement writes input %s", s.Tensor)
	}
	if len(s.Indices) != len(st.Spatial) || len(out.Shape) != len(st.Spatial) {
		return errors.Errorf("%s: %d indices, %d spatial axes, rank %d", s.Tensor, len(s.Indices), len(st.Spatial), len(out.Shape))
	}
	if st.Offset != nil && len(st.Offset) != len(st.Spatial) {
		return errors.Errorf("%s: %d offsets for %d spatial axes", s.Tensor, len(st.Offset), len(st.Spatial))
	}
	bound := map[string]bool{}
	for i, ax := range st.Spatial {
		if s.Indices[i] == nil || s.Indices[i].Name != ax.Name {
			return errors.Errorf("%s: left-hand index %d is not spatial axis %s", s.Tensor, i, ax.Name)
		}
		if off := st.OffsetAt(i); off < 0 || ax.Extent+off > out.Shape[i] || st.Offset == nil && ax.Extent != out.Shape[i] {
			return errors.Errorf("%s: axis %s has extent %d at offset %d but dimension %d is %d", s.Tensor, ax.Name, ax.Extent, off, i, out.Shape[i])
		}
		bound[ax.Name] = true
	}
	for _, r := range st.Reduction {
		if r.Extent < 0 || bound[r.Name] {
			return errors.Errorf("%s: bad reduction axis %s (extent %d)", s.Tensor, r.Name, r.Extent)
		}
		bound[r.Name] = true
	}
	if s.Reduce == ir.Assign && len(st.Reduction) > 0 {
		return errors.Errorf("%s: '=' statement with reduction axes", s.Tensor)
	}
	if s.Reduce < ir.Assign || s.Reduce > ir.Min {
		return errors.Errorf("%s: unknown assignment operator %d", s.Tensor, int(s.Reduce))
	}
	if s.RHS == nil {
		return errors.Errorf("%s: missing right-hand side", s.Tensor)
	}
	var err error
	ir.Walk(s.RHS, func(e ir.Expr) bool {
		if err != nil {
			return true
		}
		switch e := e.(type) {
		case *ir.Index:
			if !bound[e.Name] {
				err = errors.Errorf("%s: index variable %s has no extent", s.Tensor, e.Name)
			}
		case *ir.Access:
			t := spec.Tensor(e.Tensor)
			if t == nil {
				err = errors.Errorf("%s: reads undeclared tensor %s", s.Tensor, e.Tensor)
			} else if len(e.Indices) != len(t.Shape) {
				err = errors.Errorf("%s: reads %s with %d indices, rank %d", s.Tensor, e.Tensor, len(e.Indices), len(t.Shape))
			}
		case *ir.Call:
			if e.Fn < 0 || e.Fn >= ir.NumFuncs || len(e.Args) != e.Fn.Arity() {
				err = errors.Errorf("%s: bad call of function %d with %d arguments", s.Tensor, int(e.Fn), len(e.Args))
			}
		}
		return true
	})
	return err
}
