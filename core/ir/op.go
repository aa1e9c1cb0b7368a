package ir

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
	// Consts are the named constants the op was defined with.
	Consts map[string]*Const
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
}

// Tensor finds a tensor by name, or nil.
func (s *Spec) Tensor(name string) *TensorDecl {
	for _, t := range s.Tensors {
		if t.Name == name {
			return t
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
