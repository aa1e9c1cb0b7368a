package interp

import (
	"math"

	"github.com/pkg/errors"

	"github.com/neoflow/neoflow/core/ir"
)

// Run evaluates a specialized op on row-major input data (one slice per
// input, in spec order) and returns the data of every tensor of
// spec.Tensors, in order; the inputs are copied. Invalid arguments and
// out-of-bounds accesses (which Specialize rules out) are errors.
func Run(spec *ir.Spec, inputs [][]float64) (out [][]float64, err error) {
	if spec == nil {
		return nil, errors.New("interp: nil spec")
	}
	if spec.DType.Size() == 0 {
		return nil, errors.Errorf("interp: unsupported dtype %s", spec.DType)
	}
	store := spec.DType.Round

	bufs := map[string]*buffer{}
	out = make([][]float64, len(spec.Tensors))
	nin := 0
	for i, t := range spec.Tensors {
		n := t.Elems()
		b := &buffer{decl: t, data: make([]float64, n), strides: strides(t.Shape)}
		if t.Role == ir.RoleInput {
			if nin >= len(inputs) {
				return nil, errors.Errorf("interp: spec has more inputs than the %d given", len(inputs))
			}
			in := inputs[nin]
			if int64(len(in)) != n {
				return nil, errors.Errorf("interp: input %s has shape %v (%d elements) but %d values were given", t.Name, t.Shape, n, len(in))
			}
			put := store
			if t.DType.Integer() {
				put = integer(t.DType)
			}
			for j, v := range in {
				b.data[j] = put(v)
			}
			nin++
		}
		if _, dup := bufs[t.Name]; dup {
			return nil, errors.Errorf("interp: tensor %s is declared twice in the spec", t.Name)
		}
		bufs[t.Name] = b
		out[i] = b.data
	}
	if nin != len(inputs) {
		return nil, errors.Errorf("interp: spec has %d inputs, got %d", nin, len(inputs))
	}

	stmts := make([]*stmt, len(spec.Stmts))
	for i, bs := range spec.Stmts {
		s, err := compileStmt(bs, bufs)
		if err != nil {
			return nil, errors.Wrapf(err, "statement %d", i+1)
		}
		stmts[i] = s
	}

	defer func() {
		if r := recover(); r != nil {
			re, ok := r.(runtimeError)
			if !ok {
				panic(r)
			}
			out, err = nil, re.err
		}
	}()
	for i, s := range stmts {
		if t := spec.Tensor(spec.Stmts[i].Stmt.Tensor); t != nil && t.DType.Integer() {
			s.run(integer(t.DType)) // a cast's value, already an integer
			continue
		}
		s.run(store)
	}
	return out, nil
}

// integer is the value an element of an integer tensor of type d holds
// when given v: v truncated toward zero, 0 or 1 for a bool.
func integer(d ir.DType) func(float64) float64 {
	if d == ir.Bool {
		return func(v float64) float64 {
			if v != 0 {
				return 1
			}
			return 0
		}
	}
	return math.Trunc
}

// stmt is a compiled statement.
type stmt struct {
	reduce    ir.ReduceOp
	spatial   []int64 // extents; env slots 0..len-1
	reduction []int64 // extents; the following slots
	rhs       valueFn
	out       []float64
	// part is set for a statement that writes a part of its tensor
	// (ir.BoundStmt.Offset): the element at a spatial point is
	// Σ (point[d] + offset[d]) * strides[d].
	part    bool
	offset  []int64
	strides []int64
}

func compileStmt(bs *ir.BoundStmt, bufs map[string]*buffer) (*stmt, error) {
	if bs == nil || bs.Stmt == nil {
		return nil, errors.New("interp: missing statement")
	}
	b, ok := bufs[bs.Stmt.Tensor]
	if !ok {
		return nil, errors.Errorf("interp: tensor %s is not in the spec", bs.Stmt.Tensor)
	}
	s := &stmt{reduce: bs.Stmt.Reduce, out: b.data}
	c := &compiler{slots: map[string]int{}, tensors: bufs}
	if len(bs.Spatial) != len(b.decl.Shape) {
		return nil, errors.Errorf("interp: %s has rank %d but the statement has %d spatial axes", b.decl.Name, len(b.decl.Shape), len(bs.Spatial))
	}
	if bs.Offset != nil && len(bs.Offset) != len(bs.Spatial) {
		return nil, errors.Errorf("interp: %d offsets for %d spatial axes of %s", len(bs.Offset), len(bs.Spatial), b.decl.Name)
	}
	s.part, s.strides = bs.Partial(b.decl.Shape), b.strides
	for i, v := range bs.Spatial {
		off := bs.OffsetAt(i)
		if v.Extent < 1 || off < 0 || v.Extent+off > b.decl.Shape[i] {
			return nil, errors.Errorf("interp: axis %s has extent %d at offset %d but %s has size %d there", v.Name, v.Extent, off, b.decl.Name, b.decl.Shape[i])
		}
		s.offset = append(s.offset, off)
		c.slots[v.Name] = len(s.spatial)
		s.spatial = append(s.spatial, v.Extent)
	}
	for _, v := range bs.Reduction {
		if v.Extent < 1 {
			return nil, errors.Errorf("interp: reduction axis %s has extent %d", v.Name, v.Extent)
		}
		c.slots[v.Name] = len(s.spatial) + len(s.reduction)
		s.reduction = append(s.reduction, v.Extent)
	}
	rhs, err := c.value(bs.Stmt.RHS)
	if err != nil {
		return nil, err
	}
	s.rhs = rhs
	return s, nil
}

// run evaluates the statement at every spatial point, in row-major order,
// folding the right-hand side over every reduction point.
func (s *stmt) run(store func(float64) float64) {
	ns := len(s.spatial)
	env := make([]int64, ns+len(s.reduction))
	init, combine := fold(s.reduce)
	for off := 0; ; off++ {
		acc := init
		if s.reduce == ir.Assign {
			acc = s.rhs(env)
		} else {
			for {
				acc = combine(acc, s.rhs(env))
				if !next(env[ns:], s.reduction) {
					break
				}
			}
		}
		at := int64(off)
		if s.part {
			at = 0
			for d, x := range env[:ns] {
				at += (x + s.offset[d]) * s.strides[d]
			}
		}
		s.out[at] = store(acc)
		if !next(env[:ns], s.spatial) {
			return
		}
	}
}

// next advances a row-major odometer; it returns false (with idx back at
// zero) after the last point.
func next(idx, extents []int64) bool {
	for d := len(idx) - 1; d >= 0; d-- {
		idx[d]++
		if idx[d] < extents[d] {
			return true
		}
		idx[d] = 0
	}
	return false
}

// fold returns a reduction's identity and combining function.
func fold(r ir.ReduceOp) (float64, func(acc, v float64) float64) {
	switch r {
	case ir.Prod:
		return 1, func(acc, v float64) float64 { return acc * v }
	case ir.Max:
		return math.Inf(-1), maxValue
	case ir.Min:
		return math.Inf(1), minValue
	}
	return 0, func(acc, v float64) float64 { return acc + v }
}

// strides are the row-major strides of a shape.
func strides(shape []int64) []int64 {
	st := make([]int64, len(shape))
	n := int64(1)
	for d := len(shape) - 1; d >= 0; d-- {
		st[d] = n
		n *= shape[d]
	}
	return st
}
