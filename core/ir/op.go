package ir

import (
	"slices"
	"sync/atomic"
)

// ReduceOp is a statement's assignment operator.
type ReduceOp int

// Assignment operators. Assign is '=' and has no reduction axes; the others
// reduce over the statement's reduction axes starting from their identity
// (0, 1, -inf, +inf).
const (
	Assign ReduceOp = iota // =
	Sum                    // +=
	Prod                   // *=
	Max                    // max=
	Min                    // min=
)

var reduceText = [...]string{"=", "+=", "*=", "max=", "min="}

// String is the operator's token.
func (r ReduceOp) String() string { return reduceText[r] }

// Stmt is one compute statement: Tensor[Indices...] Reduce RHS.
type Stmt struct {
	Pos     Pos
	Tensor  string
	Indices []*Index // distinct plain index variables: the spatial axes
	Reduce  ReduceOp
	RHS     Expr
}

// Op is a tensor operator: statements over named tensors.
type Op struct {
	// Name is a label for messages and generated symbols; may be empty.
	Name string
	// Source is the text the op was parsed from, used for error carets.
	Source string
	// Inputs are the input tensors in call order. The parser fills them in
	// order of first appearance unless the caller fixed the order.
	Inputs []string
	// Stmts in program order.
	Stmts []*Stmt
	// Outputs fixes the order in which the op returns its outputs (the
	// written tensors no later statement reads). Empty means statement
	// order. Read it through OutputNames, the one place that decides the
	// order: the kernel's buffers, the gradient op's d_<Out> inputs, the
	// Python outputs and the custom op's schema all follow it.
	Outputs []string
	// Consts are the named constants the op was defined with.
	Consts map[string]*Const
}

// OutputNames lists the op's outputs in the order it returns them:
// Outputs when given, else the written tensors that no later statement
// reads, in statement order (DefaultOutputs).
// DisplayName is the op's name for messages, dumps and kernel comments:
// its name, or "<anonymous>" for an op without one (or no op).
func (op *Op) DisplayName() string {
	if op == nil || op.Name == "" {
		return "<anonymous>"
	}
	return op.Name
}

func (op *Op) OutputNames() []string {
	if len(op.Outputs) > 0 {
		return op.Outputs
	}
	return DefaultOutputs(op.Stmts)
}

// DefaultOutputs lists, in statement order, the tensors stmts write that
// no later statement reads.
func DefaultOutputs(stmts []*Stmt) []string {
	// One backward pass: readLater holds the tensors read by the
	// statements after the current one (linear, where ReadAfter for each
	// statement would be quadratic in a gradient op of many statements).
	readLater := map[string]bool{}
	isOut := make([]bool, len(stmts))
	for i := len(stmts) - 1; i >= 0; i-- {
		s := stmts[i]
		if s == nil {
			continue
		}
		isOut[i] = !readLater[s.Tensor]
		Walk(s.RHS, func(e Expr) bool {
			if a, ok := e.(*Access); ok {
				readLater[a.Tensor] = true
			}
			return true
		})
	}
	var out []string
	for i, s := range stmts {
		if s != nil && isOut[i] {
			out = append(out, s.Tensor)
		}
	}
	return out
}

// ReadAfter reports whether a statement after stmts[i] reads tensor t.
func ReadAfter(stmts []*Stmt, i int, t string) bool {
	read := false
	for _, later := range stmts[i+1:] {
		if later == nil {
			continue
		}
		Walk(later.RHS, func(e Expr) bool {
			if a, ok := e.(*Access); ok && a.Tensor == t {
				read = true
			}
			return !read
		})
		if read {
			return true
		}
	}
	return false
}

// Role says how a specialized op uses a tensor.
type Role int

// Tensor roles.
const (
	RoleInput Role = iota
	RoleOutput
	RoleTemp
)

func (r Role) String() string { return [...]string{"input", "output", "temp"}[r] }

// TensorDecl is a tensor of a specialized op: dense, row-major.
type TensorDecl struct {
	Name  string
	Role  Role
	Shape []int64
	// Sizes, in a kernel with symbolic extents (loops.Generalize), names
	// the size variable of each dimension that has one ("" for a fixed
	// one); Shape then holds one value of it. Nil when every dimension is
	// fixed.
	Sizes []string
	// DType is the element type of an integer input (Int32, Int64, Bool)
	// or of a tensor a cast writes (Int32, Int64: sema); InvalidDType,
	// the zero value, means the spec's dtype. Read it through
	// Spec.ElemType.
	DType DType
	// Limit, when above 0, makes the tensor an index tensor: some access
	// reads it as an index (ir.Access.Indirect), and every element must
	// lie in [0, Limit), the least extent it indexes. Kernels do not check
	// it: the caller checks the tensor before each launch (negative
	// indices are refused too, as torch.nn.functional.embedding does).
	Limit int64
}

// Elems is the number of elements.
func (t *TensorDecl) Elems() int64 {
	n := int64(1)
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// Var is an index variable with its extent: it ranges over [0, Extent).
type Var struct {
	Name   string
	Extent int64
}

// BoundStmt is a statement with the extents of its axes known.
type BoundStmt struct {
	Stmt *Stmt
	// Spatial axes, in the order of the left-hand side.
	Spatial []Var
	// Reduction axes, in order of first appearance on the right.
	Reduction []Var
	// Offset, when not nil, places the statement in a part of its tensor:
	// it writes Tensor[Spatial[0] + Offset[0], ...], the box of
	// Spatial's extents starting at Offset (index-set splitting, core/fuse,
	// makes such statements). nil writes the whole tensor from 0.
	Offset []int64
	// Joined runs the statement in the loop nest of the statement before
	// it (a fused group, made by core/fuse's fuse-group pass): the
	// group's statements have the same axes (names and extents), and each
	// point of the shared loops computes every member in order. It is a
	// permission, not a change of meaning: running the members one after
	// the other, as separate nests, computes the same values, and a
	// backend or schedule that cannot run a group that way does so.
	Joined bool
}

// Vars is the statement's variables: the spatial ones, then the
// reduction ones, in a new slice.
func (s *BoundStmt) Vars() []Var {
	return append(append(make([]Var, 0, len(s.Spatial)+len(s.Reduction)), s.Spatial...), s.Reduction...)
}

// Points is the number of times the statement evaluates its right-hand
// side: the product of its spatial and reduction extents.
func (s *BoundStmt) Points() int64 {
	n := int64(1)
	for _, v := range s.Spatial {
		n *= v.Extent
	}
	for _, v := range s.Reduction {
		n *= v.Extent
	}
	return n
}

// OffsetAt is the offset of spatial axis d (0 without offsets).
func (s *BoundStmt) OffsetAt(d int) int64 {
	if d < len(s.Offset) {
		return s.Offset[d]
	}
	return 0
}

// Partial reports whether the statement has a nonzero offset, or extents
// that fall short of shape, the written tensor's shape: it writes a part.
func (s *BoundStmt) Partial(shape []int64) bool {
	for d, v := range s.Spatial {
		if s.OffsetAt(d) != 0 || d < len(shape) && v.Extent != shape[d] {
			return true
		}
	}
	return false
}

// Spec is an op specialized for concrete input shapes and a dtype: every
// extent is known and every access has been proven in bounds. Backends and
// the interpreter consume Specs.
type Spec struct {
	Op    *Op
	DType DType
	// Tensors lists every buffer a kernel receives, in argument order:
	// inputs in Op.Inputs order, then outputs, then temporaries (each in
	// statement order).
	Tensors []*TensorDecl
	Stmts   []*BoundStmt
	// index finds Tensors by name for Tensor: built on first use, and again
	// when Tensors changed under it.
	index atomic.Pointer[map[string]int]
}

// ElemType is the element type of t's buffer: its own integer dtype, or
// the spec's.
func (s *Spec) ElemType(t *TensorDecl) DType {
	if t.DType != InvalidDType {
		return t.DType
	}
	return s.DType
}

// IntInputs maps each integer input to its element type (nil when there
// is none), as sema.SpecializeTyped takes them.
func (s *Spec) IntInputs() map[string]DType {
	var out map[string]DType
	for _, t := range s.Tensors {
		if t.Role == RoleInput && t.DType.Integer() {
			if out == nil {
				out = map[string]DType{}
			}
			out[t.Name] = t.DType
		}
	}
	return out
}

// WithStmts is s with other statements: a new Spec and Op sharing
// everything else, the tensor list copied. The op keeps its outputs in
// their order (its statements may now write an output in several parts);
// its statements are the new ones, so that Hash tells the new op from the
// original.
func (s *Spec) WithStmts(stmts []*BoundStmt) *Spec {
	op := *s.Op
	op.Outputs = slices.Clone(s.Op.OutputNames())
	op.Stmts = make([]*Stmt, len(stmts))
	for i, st := range stmts {
		op.Stmts[i] = st.Stmt
	}
	return &Spec{Op: &op, DType: s.DType, Tensors: slices.Clone(s.Tensors), Stmts: stmts}
}

// Tensor finds a tensor by name, or nil. Passes ask it for every access of
// every statement they weigh: it looks the name up in an index of
// Tensors, which it checks against Tensors (a caller may replace or
// shorten the slice) and builds again when they disagree.
func (s *Spec) Tensor(name string) *TensorDecl {
	if idx := s.index.Load(); idx != nil {
		if i, ok := (*idx)[name]; ok && i < len(s.Tensors) && s.Tensors[i].Name == name {
			return s.Tensors[i]
		}
	}
	for i, t := range s.Tensors {
		if t.Name == name {
			idx := make(map[string]int, len(s.Tensors))
			for j := len(s.Tensors) - 1; j >= 0; j-- {
				idx[s.Tensors[j].Name] = j // the first of a name, as the search finds it
			}
			s.index.Store(&idx)
			return s.Tensors[i]
		}
	}
	return nil
}

// Outputs lists the output tensors in order.
func (s *Spec) Outputs() []*TensorDecl { return s.byRole(RoleOutput) }

// InputsDecl lists the input tensors in order.
func (s *Spec) InputsDecl() []*TensorDecl { return s.byRole(RoleInput) }

func (s *Spec) byRole(r Role) []*TensorDecl {
	var out []*TensorDecl
	for _, t := range s.Tensors {
		if t.Role == r {
			out = append(out, t)
		}
	}
	return out
}
