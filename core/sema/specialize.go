package sema

import (
	"maps"
	"slices"
	"strings"

	"github.com/neoflow/neoflow/core/ir"
)

// Specialize binds an op to a dtype, the shapes of its inputs (in Op.Inputs
// order) and optional sizes of index variables by name, which apply to
// every statement using the name. It checks the op, infers the extent of
// every index variable and the shape of every written tensor, proves every
// access in bounds and returns the Spec. Problems with the op or the
// arguments are user-facing *ir.Error values.
func Specialize(op *ir.Op, dtype ir.DType, inputShapes [][]int64, sizes map[string]int64) (*ir.Spec, error) {
	return SpecializeTyped(op, dtype, inputShapes, sizes, nil)
}

// SpecializeTyped is Specialize for an op with integer inputs: ints maps
// each of them to its element type (ir.Int32, ir.Int64 or ir.Bool); the
// other inputs have the float dtype. An input read as an index must be
// an int32 or int64 tensor; its TensorDecl gets the Limit every element
// must respect, which the caller checks before each launch.
func SpecializeTyped(op *ir.Op, dtype ir.DType, inputShapes [][]int64, sizes map[string]int64, ints map[string]ir.DType) (*ir.Spec, error) {
	if err := Check(op); err != nil {
		return nil, err
	}
	if !dtype.Float() {
		return nil, op.Errorf(ir.Pos{}, "unsupported dtype %s: an op computes in float32, float64, float16 or bfloat16", dtype)
	}
	if len(inputShapes) != len(op.Inputs) {
		return nil, op.Errorf(ir.Pos{}, "op %stakes %s (%s), got %d",
			nameSpace(op), plural(len(op.Inputs), "input", "inputs"), strings.Join(op.Inputs, ", "), len(inputShapes))
	}
	shapes := map[string][]int64{}
	first := firstAccesses(op)
	for i, name := range op.Inputs {
		shape := inputShapes[i]
		if u, ok := first[name]; ok && len(u.Indices) != len(shape) {
			return nil, op.Errorf(u.Pos, "input %s has rank %d but is used with %s", name, len(shape), plural(len(u.Indices), "index", "indices"))
		}
		for d, n := range shape {
			if n < 1 {
				what := "a zero-size"
				if n < 0 {
					what = "a negative"
				}
				return nil, op.Errorf(ir.Pos{}, "input %s has shape %s with %s dimension %d: every dimension must be at least 1",
					name, ir.ShapeString(shape), what, d)
			}
		}
		if err := checkElems(op, ir.Pos{}, name, shape); err != nil {
			return nil, err
		}
		shapes[name] = slices.Clone(shape)
	}
	if err := checkSizes(op, sizes); err != nil {
		return nil, err
	}
	if err := checkInputTypes(op, dtype, ints); err != nil {
		return nil, err
	}

	spec := &ir.Spec{Op: op, DType: dtype}
	limits := map[string]int64{}
	for _, s := range op.Stmts {
		ext, err := inferExtents(op, s, shapes, sizes)
		if err != nil {
			return nil, err
		}
		if err := proveBounds(op, s, ext, shapes); err != nil {
			return nil, err
		}
		if err := indexLimits(op, s, ext, shapes, limits); err != nil {
			return nil, err
		}
		b := &ir.BoundStmt{Stmt: s}
		lhs := map[string]bool{}
		shape := []int64{}
		for _, x := range s.Indices {
			lhs[x.Name] = true
			b.Spatial = append(b.Spatial, ir.Var{Name: x.Name, Extent: ext[x.Name]})
			shape = append(shape, ext[x.Name])
		}
		for _, v := range varNames(s.RHS) {
			if !lhs[v] {
				b.Reduction = append(b.Reduction, ir.Var{Name: v, Extent: ext[v]})
			}
		}
		if err := checkElems(op, s.Pos, s.Tensor, shape); err != nil {
			return nil, err
		}
		shapes[s.Tensor] = shape
		spec.Stmts = append(spec.Stmts, b)
	}

	for _, name := range op.Inputs {
		spec.Tensors = append(spec.Tensors, &ir.TensorDecl{Name: name, Role: ir.RoleInput, Shape: shapes[name], DType: ints[name], Limit: limits[name]})
	}
	// Outputs in the op's return order (Check proved them a permutation of
	// the statement-order outputs), then temporaries in statement order; a
	// tensor a cast writes is of its integer type.
	outputs := op.OutputNames()
	writes := map[string]ir.DType{}
	for _, s := range op.Stmts {
		writes[s.Tensor] = castType(s)
	}
	for _, name := range outputs {
		spec.Tensors = append(spec.Tensors, &ir.TensorDecl{Name: name, Role: ir.RoleOutput, Shape: shapes[name], DType: writes[name]})
	}
	for _, s := range op.Stmts {
		if !slices.Contains(outputs, s.Tensor) {
			spec.Tensors = append(spec.Tensors, &ir.TensorDecl{Name: s.Tensor, Role: ir.RoleTemp, Shape: shapes[s.Tensor], DType: writes[s.Tensor]})
		}
	}
	return spec, nil
}

// checkSizes rejects sizes below 1 and sizes of variables no statement uses
// (most likely a typo).
func checkSizes(op *ir.Op, sizes map[string]int64) error {
	used := map[string]bool{}
	for _, s := range op.Stmts {
		for _, v := range stmtVars(s) {
			used[v] = true
		}
	}
	for _, v := range slices.Sorted(maps.Keys(sizes)) {
		if !used[v] {
			return op.Errorf(ir.Pos{}, "sizes names index %s, which the op does not use", v)
		}
		if sizes[v] < 1 {
			return op.Errorf(ir.Pos{}, "size of index %s must be at least 1, got %d", v, sizes[v])
		}
	}
	return nil
}

// checkElems rejects a tensor of 2^62 elements or more: kernels compute
// element offsets in int64, which must not overflow.
func checkElems(op *ir.Op, pos ir.Pos, name string, shape []int64) error {
	n := int64(1)
	for _, d := range shape {
		if d > (indexLimit-1)/n { // n*d >= 2^62
			return op.Errorf(pos, "tensor %s has shape %s: 2^62 elements or more, too many to address", name, ir.ShapeString(shape))
		}
		n *= d
	}
	return nil
}

// firstAccesses maps each tensor the op reads to its first access, in one
// pass (an op may have thousands of inputs).
func firstAccesses(op *ir.Op) map[string]*ir.Access {
	out := map[string]*ir.Access{}
	for _, s := range op.Stmts {
		for _, a := range accesses(s.RHS) {
			if _, ok := out[a.acc.Tensor]; !ok {
				out[a.acc.Tensor] = a.acc
			}
		}
	}
	return out
}
