package ir

// Pos is a 1-based line and column in an op's source text. The zero Pos means
// "unknown".
type Pos struct{ Line, Col int }

// Expr is an expression node. The concrete types are *IntLit, *FloatLit,
// *Const, *Index, *Access, *Unary, *Binary, *Call and *Where.
type Expr interface {
	// At is the position of the node's first token.
	At() Pos
	exprNode()
}

// IntLit is an integer literal. Its kind is KindIndex. The parser folds a
// leading minus into the literal, so Value may be negative.
type IntLit struct {
	Pos   Pos
	Value int64
}

// FloatLit is a floating-point literal (it has a '.' or an exponent in the
// source, or is inf or nan). Its kind is KindValue. Value may be negative
// (folded minus), infinite or NaN; it prints as inf, -inf and nan.
type FloatLit struct {
	Pos   Pos
	Value float64
}

// Const is a named scalar constant bound when the op was defined. An integer
// constant has kind KindIndex and may appear in index expressions; a float
// constant has kind KindValue.
type Const struct {
	Pos     Pos
	Name    string
	IsFloat bool
	Int     int64   // the value when !IsFloat
	Float   float64 // the value when IsFloat
}

// Index is a use of an index variable.
type Index struct {
	Pos  Pos
	Name string
}

// Access reads one element of a tensor: Tensor[Indices...]. Each index is a
// KindIndex expression. Its kind is KindValue, unless Indirect is set.
//
// An indirect access reads an element of an integer tensor (an index
// tensor) as an index: the parser marks an access that stands as a whole
// index of another access, E[Idx[b, t], d], and autodiff's scatter forms
// compare one with an index variable, where(z == Idx[b, t], ...). Its kind
// is KindIndex. No bound of its value can be proven: each kernel that reads
// through one gets its index tensor checked before the launch against the
// extents it indexes (TensorDecl.Limit).
type Access struct {
	Pos      Pos
	Tensor   string
	Indices  []Expr
	Indirect bool
}

// UnOp is a unary operator.
type UnOp int

// Unary operators.
const (
	Neg UnOp = iota // -x
	Not             // !x, on KindBool
)

// Unary applies a unary operator.
type Unary struct {
	Pos Pos
	Op  UnOp
	X   Expr
}

// BinOp is a binary operator.
type BinOp int

// Binary operators, in no particular order. Precedence (loosest first):
// Or; And; Eq Ne; Lt Le Gt Ge; Add Sub; Mul Div Mod. All are left
// associative.
const (
	Add BinOp = iota
	Sub
	Mul
	Div // floor division on indices, true division on values
	Mod // floor modulo
	Lt
	Le
	Gt
	Ge
	Eq
	Ne
	And // &&, on KindBool
	Or  // ||, on KindBool
)

// Binary applies a binary operator.
type Binary struct {
	Pos  Pos
	Op   BinOp
	X, Y Expr
}

// Func is a built-in math function.
type Func int

// Built-in functions. FuncMin, FuncMax, FuncPow and FuncAtan2 take two
// arguments, the rest one. FuncMin, FuncMax and FuncAbs keep the kind of
// their arguments (index or value); the others produce KindValue. FuncRound
// rounds half to even (torch.round); FuncSign is 0 at 0 and at NaN
// (torch.sign); FuncSoftplus is x above 20, else log1p(exp(x))
// (torch.nn.functional.softplus). clamp(x, lo, hi) is no function of its
// own: the parser reads it as min(max(x, lo), hi).
const (
	FuncExp Func = iota
	FuncLog
	FuncSqrt
	FuncRsqrt
	FuncTanh
	FuncSigmoid
	FuncRelu
	FuncAbs
	FuncPow
	FuncMin
	FuncMax
	FuncErf
	FuncSin
	FuncCos
	FuncTan
	FuncAsin
	FuncAcos
	FuncAtan
	FuncAtan2
	FuncSinh
	FuncCosh
	FuncLog1p
	FuncExpm1
	FuncLog2
	FuncExp2
	FuncSoftplus
	FuncFloor
	FuncCeil
	FuncRound
	FuncTrunc
	FuncSign
	// FuncInt32 and FuncInt64 cast to an integer type: their value is the
	// argument truncated toward zero (as tensor.to(torch.int32)), and a
	// statement whose whole right-hand side is one writes an integer
	// tensor of that type (sema). FuncFloat makes its argument a value (an
	// index expression converted; a value unchanged).
	FuncInt32
	FuncInt64
	FuncFloat
	// NumFuncs counts the functions: each Func is below it.
	NumFuncs
)

// CastType is the integer type a cast to an integer makes (ir.Int32,
// ir.Int64), InvalidDType for any other function.
func (f Func) CastType() DType {
	switch f {
	case FuncInt32:
		return Int32
	case FuncInt64:
		return Int64
	}
	return InvalidDType
}

// Call applies a built-in function.
type Call struct {
	Pos  Pos
	Fn   Func
	Args []Expr
}

// Where selects Then where Cond holds and Else otherwise; only the selected
// branch is evaluated.
type Where struct {
	Pos              Pos
	Cond, Then, Else Expr
}

func (e *IntLit) At() Pos   { return e.Pos }
func (e *FloatLit) At() Pos { return e.Pos }
func (e *Const) At() Pos    { return e.Pos }
func (e *Index) At() Pos    { return e.Pos }
func (e *Access) At() Pos   { return e.Pos }
func (e *Unary) At() Pos    { return e.Pos }
func (e *Binary) At() Pos   { return e.Pos }
func (e *Call) At() Pos     { return e.Pos }
func (e *Where) At() Pos    { return e.Pos }

func (*IntLit) exprNode()   {}
func (*FloatLit) exprNode() {}
func (*Const) exprNode()    {}
func (*Index) exprNode()    {}
func (*Access) exprNode()   {}
func (*Unary) exprNode()    {}
func (*Binary) exprNode()   {}
func (*Call) exprNode()     {}
func (*Where) exprNode()    {}

var funcNames = [NumFuncs]string{"exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "relu", "abs", "pow", "min", "max", "erf",
	"sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "log1p", "expm1", "log2", "exp2", "softplus",
	"floor", "ceil", "round", "trunc", "sign", "int32", "int64", "float"}

// String is the function's name in the expression language.
func (f Func) String() string { return funcNames[f] }

// Arity is the number of arguments the function takes.
func (f Func) Arity() int {
	switch f {
	case FuncPow, FuncMin, FuncMax, FuncAtan2:
		return 2
	}
	return 1
}

// LookupFunc finds a built-in function by name.
func LookupFunc(name string) (Func, bool) {
	for i, n := range funcNames {
		if n == name {
			return Func(i), true
		}
	}
	return 0, false
}

var binOpText = [...]string{"+", "-", "*", "/", "%", "<", "<=", ">", ">=", "==", "!=", "&&", "||"}

// String is the operator's token.
func (op BinOp) String() string { return binOpText[op] }

// Prec is the binding strength, larger binds tighter (Or=1 ... Mul=6).
func (op BinOp) Prec() int {
	switch op {
	case Or:
		return 1
	case And:
		return 2
	case Eq, Ne:
		return 3
	case Lt, Le, Gt, Ge:
		return 4
	case Add, Sub:
		return 5
	}
	return 6
}

// IsCompare reports whether op is a comparison (its result is KindBool).
func (op BinOp) IsCompare() bool { return op >= Lt && op <= Ne }

// IsLogic reports whether op is && or ||.
func (op BinOp) IsLogic() bool { return op == And || op == Or }

// IsZero reports whether e is a literal or named constant equal to zero
// (of either sign): the else branch of a guard where(c, x, 0.0), a factor
// that makes a product vanish. The passes simplify with it; they do not
// hold other meanings of "zero" of their own.
func IsZero(e Expr) bool {
	switch e := e.(type) {
	case *IntLit:
		return e.Value == 0
	case *FloatLit:
		return e.Value == 0
	case *Const:
		if e.IsFloat {
			return e.Float == 0
		}
		return e.Int == 0
	}
	return false
}
