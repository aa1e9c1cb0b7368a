package cgen

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/pkg/errors"

	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/loops"
)

// C precedence levels, loosest first.
const (
	precCond  = 3  // ?:
	precOr    = 4  // ||
	precAnd   = 5  // &&
	precBitOr = 6  // |
	precBitAn = 8  // &
	precEq    = 9  // == !=
	precRel   = 10 // < <= > >=
	precAdd   = 12 // + -
	precMul   = 13 // * / %
	precUnary = 15 // - ! (cast)
	precAtom  = 16 // names, literals, calls, subscripts
)

// cexpr is rendered C with its precedence and kind.
type cexpr struct {
	s    *code
	prec int
	kind ir.Kind
}

func atom(s string, k ir.Kind) cexpr { return cexpr{text(s), precAtom, k} }

// at renders c as an operand of a context that needs precedence p.
func (c cexpr) at(p int) *code {
	if c.prec < p {
		return cat("(", c.s, ")")
	}
	return c.s
}

// code is C text built by concatenation in constant time: a rope. Joining
// flat strings at every node would copy each operand again at each
// enclosing node, quadratic in the depth of a long expression.
type code struct {
	leaf  string
	parts []*code // when not a leaf
	first byte    // the first byte of the text; 0 when it is empty
}

func text(s string) *code {
	c := &code{leaf: s}
	if s != "" {
		c.first = s[0]
	}
	return c
}

// cat concatenates strings and *code values.
func cat(parts ...any) *code {
	c := &code{parts: make([]*code, 0, len(parts))}
	for _, p := range parts {
		var x *code
		switch p := p.(type) {
		case string:
			x = text(p)
		case *code:
			x = p
		default:
			panic(fmt.Sprintf("cgen: cat of %T", p))
		}
		if c.first == 0 {
			c.first = x.first
		}
		c.parts = append(c.parts, x)
	}
	return c
}

// String flattens the text.
func (c *code) String() string {
	var b strings.Builder
	c.write(&b)
	return b.String()
}

func (c *code) write(b *strings.Builder) {
	if c.parts == nil {
		b.WriteString(c.leaf)
		return
	}
	for _, p := range c.parts {
		p.write(b)
	}
}

func (r *renderer) call(name string, k ir.Kind, args ...cexpr) cexpr {
	if strings.HasPrefix(name, "nf_") {
		r.used[name] = true
	}
	parts := make([]any, 0, 2*len(args)+2)
	parts = append(parts, name+"(")
	for i, a := range args {
		if i > 0 {
			parts = append(parts, ", ")
		}
		parts = append(parts, a.s)
	}
	return cexpr{cat(append(parts, ")")...), precAtom, k}
}

// math names a <math.h> function for the value type: expf or exp.
func (r *renderer) math(name string) string { return name + r.suffix }

// value renders e as a value of the kernel's type.
func (r *renderer) value(e ir.Expr) (cexpr, error) {
	if l, ok := e.(*ir.IntLit); ok {
		return r.floatLit(float64(l.Value)), nil
	}
	c, err := r.expr(e)
	if err != nil {
		return c, err
	}
	return r.toValue(c)
}

func (r *renderer) toValue(c cexpr) (cexpr, error) {
	switch c.kind {
	case ir.KindIndex:
		return cexpr{cat("("+r.ctype+")", c.at(precUnary)), precUnary, ir.KindValue}, nil
	case ir.KindBool:
		return c, errors.Errorf("a bool used as a value: %s", c.s)
	}
	return c, nil
}

// convert turns c, the rendering of e in its own kind, into the rendering
// of e with kind k (KindIndex or KindValue): for a value, what r.value(e)
// renders. Rendering operands in their own kind first tells their kinds
// without asking ir.KindOf, which recurses into the whole operand: at
// every node of a long expression that was quadratic.
func (r *renderer) convert(e ir.Expr, c cexpr, k ir.Kind) (cexpr, error) {
	if k != ir.KindValue {
		return c, nil
	}
	if l, ok := e.(*ir.IntLit); ok {
		return r.floatLit(float64(l.Value)), nil
	}
	return r.toValue(c)
}

func (r *renderer) floatLit(v float64) cexpr {
	bits, suffix := 64, ""
	if r.spec.DType.Compute() == ir.Float32 {
		// The value as the kernel sees it; beyond float32's range it is
		// an infinity.
		bits, suffix = 32, "f"
		v = float64(float32(v))
	}
	switch {
	case math.IsNaN(v):
		return atom("NAN", ir.KindValue)
	case math.IsInf(v, 1):
		return atom("INFINITY", ir.KindValue)
	case math.IsInf(v, -1):
		return cexpr{text("-INFINITY"), precUnary, ir.KindValue}
	}
	s := strconv.FormatFloat(v, 'g', -1, bits)
	if !strings.ContainsAny(s, ".eE") {
		s += ".0"
	}
	s += suffix
	if strings.HasPrefix(s, "-") {
		return cexpr{text(s), precUnary, ir.KindValue}
	}
	return atom(s, ir.KindValue)
}

func intLit(v int64) cexpr {
	if v == math.MinInt64 {
		return cexpr{text("(-9223372036854775807 - 1)"), precAtom, ir.KindIndex}
	}
	s := strconv.FormatInt(v, 10)
	if v < 0 {
		return cexpr{text(s), precUnary, ir.KindIndex}
	}
	return atom(s, ir.KindIndex)
}

// expr renders e in its own kind.
func (r *renderer) expr(e ir.Expr) (cexpr, error) {
	switch e := e.(type) {
	case *ir.IntLit:
		return intLit(e.Value), nil
	case *ir.FloatLit:
		return r.floatLit(e.Value), nil
	case *ir.Const:
		if e.IsFloat {
			return r.floatLit(e.Float), nil
		}
		return intLit(e.Int), nil
	case *ir.Index:
		if _, ok := r.vars[e.Name]; !ok {
			return cexpr{}, errors.Errorf("index variable %s is not bound by an enclosing loop", e.Name)
		}
		if loops.IsSize(e.Name) {
			return atom(sizeName(e.Name), ir.KindIndex), nil
		}
		v, err := varName(e.Name)
		return atom(v, ir.KindIndex), err
	case *ir.Access:
		return r.access(e)
	case *ir.Unary:
		x, err := r.expr(e.X)
		if err != nil {
			return x, err
		}
		if e.Op == ir.Not {
			return cexpr{cat("!", x.at(precUnary)), precUnary, ir.KindBool}, nil
		}
		s := x.at(precUnary)
		if s.first == '-' {
			s = cat("(", s, ")")
		}
		return cexpr{cat("-", s), precUnary, x.kind}, nil
	case *ir.Binary:
		return r.binary(e)
	case *ir.Call:
		return r.callExpr(e)
	case *ir.Where:
		if c, ok, err := r.blend(e); ok || err != nil {
			return c, err
		}
		cond, err := r.expr(e.Cond)
		if err != nil {
			return cond, err
		}
		a, err := r.expr(e.Then)
		if err != nil {
			return a, err
		}
		b, err := r.expr(e.Else)
		if err != nil {
			return b, err
		}
		k := ir.JoinKinds(a.kind, b.kind)
		if a, err = r.convert(e.Then, a, k); err != nil {
			return a, err
		}
		if b, err = r.convert(e.Else, b, k); err != nil {
			return b, err
		}
		return cexpr{cat(cond.at(precOr), " ? ", a.at(precOr), " : ", b.at(precCond)), precCond, k}, nil
	case nil:
		return cexpr{}, errors.New("nil expression")
	}
	return cexpr{}, errors.Errorf("unsupported expression %T", e)
}

var binText = map[ir.BinOp]struct {
	tok  string
	prec int
}{
	ir.Add: {"+", precAdd}, ir.Sub: {"-", precAdd}, ir.Mul: {"*", precMul}, ir.Div: {"/", precMul}, ir.Mod: {"%", precMul},
	ir.Lt: {"<", precRel}, ir.Le: {"<=", precRel}, ir.Gt: {">", precRel}, ir.Ge: {">=", precRel},
	ir.Eq: {"==", precEq}, ir.Ne: {"!=", precEq}, ir.And: {"&&", precAnd}, ir.Or: {"||", precOr},
}

func (r *renderer) binary(e *ir.Binary) (cexpr, error) {
	op, ok := binText[e.Op]
	if !ok {
		return cexpr{}, errors.Errorf("unknown operator %d", int(e.Op))
	}
	x, err := r.expr(e.X)
	if err != nil {
		return cexpr{}, err
	}
	y, err := r.expr(e.Y)
	if err != nil {
		return cexpr{}, err
	}
	yKind := y.kind
	k := ir.JoinKinds(x.kind, y.kind)
	if e.Op.IsLogic() {
		k = ir.KindBool
	} else {
		if x, err = r.convert(e.X, x, k); err != nil {
			return cexpr{}, err
		}
		if y, err = r.convert(e.Y, y, k); err != nil {
			return cexpr{}, err
		}
	}
	resKind := k
	if e.Op.IsCompare() {
		resKind = ir.KindBool
	}
	if (e.Op == ir.Div || e.Op == ir.Mod) && k == ir.KindIndex && !r.plainDiv(e) {
		name := "nf_floordiv"
		if e.Op == ir.Mod {
			name = "nf_floormod"
		}
		return r.call(name, ir.KindIndex, x, y), nil
	}
	if e.Op == ir.Mod && k == ir.KindValue {
		return r.call("nf_mod", ir.KindValue, x, y), nil
	}
	if e.Op.IsLogic() && !r.readsTensor(e) {
		// Both sides are 0/1 and cannot fault, so evaluate both: without
		// the branch of && / ||, a guarded lane loop still vectorizes
		// (a where-padded conv ran 6x faster). Parentheses keep -Wall quiet.
		tok, prec := "&", precBitAn
		if e.Op == ir.Or {
			tok, prec = "|", precBitOr
		}
		left := x.at(precAtom)
		if x.prec == prec { // a chain: (a) & (b) & (c)
			left = x.s
		}
		return cexpr{cat(left, " "+tok+" ", y.at(precAtom)), prec, resKind}, nil
	}
	yp := op.prec + 1
	if k == ir.KindIndex && reassociates(e.Op, e.Y, yKind) {
		yp = op.prec
	}
	return cexpr{cat(x.at(op.prec), " "+op.tok+" ", y.at(yp)), op.prec, resKind}, nil
}

// reassociates reports whether x op (y) may drop the parentheses around an
// index operand y of kind yKind: integer + and * are associative
// (a + (b - c) is a + b - c), unlike their floating-point counterparts.
func reassociates(op ir.BinOp, y ir.Expr, yKind ir.Kind) bool {
	b, ok := y.(*ir.Binary)
	if !ok || yKind != ir.KindIndex {
		return false
	}
	switch op {
	case ir.Add:
		return b.Op == ir.Add || b.Op == ir.Sub
	case ir.Mul:
		return b.Op == ir.Mul
	}
	return false
}

// plainDiv reports whether an index division or modulo may use C's
// truncating operators: the dividend is provably non-negative and the
// divisor a positive constant.
func (r *renderer) plainDiv(e *ir.Binary) bool {
	dlo, dhi, ok := loops.IndexRange(e.Y, r.vars)
	if !ok || dlo != dhi || dlo <= 0 {
		return false
	}
	xlo, _, ok := loops.IndexRange(e.X, r.vars)
	return ok && xlo >= 0
}

func (r *renderer) callExpr(e *ir.Call) (cexpr, error) {
	if len(e.Args) != e.Fn.Arity() {
		return cexpr{}, errors.Errorf("%s takes %d arguments, got %d", e.Fn, e.Fn.Arity(), len(e.Args))
	}
	k := ir.KindValue
	if e.Fn == ir.FuncMin || e.Fn == ir.FuncMax || e.Fn == ir.FuncAbs {
		k = ir.KindIndex // unless an argument is a value, as in ir.KindOf
	}
	args := make([]cexpr, len(e.Args))
	for i, a := range e.Args {
		c, err := r.expr(a)
		if err != nil {
			return c, err
		}
		args[i] = c
		k = ir.JoinKinds(k, c.kind)
	}
	for i, a := range e.Args {
		c, err := r.convert(a, args[i], k)
		if err != nil {
			return c, err
		}
		args[i] = c
	}
	if k == ir.KindIndex {
		switch e.Fn {
		case ir.FuncAbs:
			return r.call("nf_absi", k, args...), nil
		case ir.FuncMin:
			return r.call("nf_mini", k, args...), nil
		case ir.FuncMax:
			return r.call("nf_maxi", k, args...), nil
		}
		return cexpr{}, errors.Errorf("%s of an index", e.Fn)
	}
	if n, ok := smallPower(e); ok {
		return r.call(powHelpers[n], k, args[0]), nil
	}
	switch e.Fn {
	case ir.FuncExp, ir.FuncLog, ir.FuncSqrt, ir.FuncTanh, ir.FuncPow, ir.FuncErf,
		ir.FuncSin, ir.FuncCos, ir.FuncTan, ir.FuncAsin, ir.FuncAcos, ir.FuncAtan, ir.FuncAtan2, ir.FuncSinh, ir.FuncCosh,
		ir.FuncLog1p, ir.FuncExpm1, ir.FuncLog2, ir.FuncExp2, ir.FuncFloor, ir.FuncCeil, ir.FuncTrunc:
		return r.call(r.math(e.Fn.String()), k, args...), nil
	case ir.FuncInt32, ir.FuncInt64: // truncated toward zero; the store into an integer tensor converts
		return r.call(r.math("trunc"), k, args...), nil
	case ir.FuncFloat:
		return args[0], nil
	case ir.FuncRound: // rint rounds half to even in the default rounding mode, as torch.round
		return r.call(r.math("rint"), k, args...), nil
	case ir.FuncSoftplus, ir.FuncSign:
		return r.call("nf_"+e.Fn.String(), k, args...), nil
	case ir.FuncAbs:
		return r.call(r.math("fabs"), k, args...), nil
	case ir.FuncRsqrt, ir.FuncSigmoid, ir.FuncRelu, ir.FuncMin, ir.FuncMax:
		return r.call("nf_"+e.Fn.String(), k, args...), nil
	}
	return cexpr{}, errors.Errorf("unknown function %d", int(e.Fn))
}

// access renders a read of a tensor element (row-major, constant
// strides) or of a local, as a value of the compute type.
func (r *renderer) access(a *ir.Access) (cexpr, error) {
	if t := r.tensors[a.Tensor]; t != nil && t.DType.Integer() && !loops.IsLocal(a.Tensor) {
		return r.intRead(a)
	}
	if r.stype == "" || loops.IsLocal(a.Tensor) {
		return r.ref(a)
	}
	c, err := r.ref(a) // a 16-bit kernel is CUDA's, which renders no masked loads
	if err != nil {
		return c, err
	}
	r.used["nf_ld"] = true
	return cexpr{cat("nf_ld(", c.s, ")"), precAtom, ir.KindValue}, nil
}

// intRead renders a read of an integer tensor: an index (int64) where the
// access is indirect, else a value of the kernel's compute type.
func (r *renderer) intRead(a *ir.Access) (cexpr, error) {
	c, err := r.ref(a)
	if err != nil {
		return c, err
	}
	to, k := r.ctype, ir.KindValue
	if a.Indirect {
		to, k = r.itype, ir.KindIndex
	}
	return cexpr{cat("("+to+")", c.at(precUnary)), precUnary, k}, nil
}

// ref renders a tensor element or a local as an lvalue: of the storage
// type for a tensor. Under a blend (see blend) a tensor read that may be
// out of bounds is a masked load instead, a value.
func (r *renderer) ref(a *ir.Access) (cexpr, error) {
	if loops.IsLocal(a.Tensor) {
		name, err := localName(a.Tensor)
		if err != nil || len(a.Indices) == 0 {
			return atom(name, ir.KindValue), err
		}
		if len(a.Indices) != 1 {
			return cexpr{}, errors.Errorf("local %s indexed by %d indices", a.Tensor, len(a.Indices))
		}
		i, err := r.expr(a.Indices[0])
		return cexpr{cat(name+"[", i.s, "]"), precAtom, ir.KindValue}, err
	}
	t := r.tensors[a.Tensor]
	if t == nil {
		return cexpr{}, errors.Errorf("access to unknown tensor %s", a.Tensor)
	}
	if len(a.Indices) != len(t.Shape) {
		return cexpr{}, errors.Errorf("%s has rank %d, accessed with %d indices", a.Tensor, len(t.Shape), len(a.Indices))
	}
	for _, x := range a.Indices {
		if k := r.kind(x); k != ir.KindIndex {
			return cexpr{}, errors.Errorf("index of %s is a %v: %s", a.Tensor, k, ir.ExprString(x))
		}
	}
	off := loops.FlatIndexOf(a, t)
	name, err := tensorName(a.Tensor)
	if err != nil {
		return cexpr{}, err
	}
	i, err := r.expr(off)
	read := cexpr{cat(name+"[", i.s, "]"), precAtom, ir.KindValue}
	if len(r.masks) > 0 && !r.inBounds(a) {
		// Under a blend the read is evaluated whatever its guards say:
		// read only where they all hold (a masked load), 0 elsewhere.
		read = cexpr{cat(r.maskText(), " ? ", read.s, " : ", r.floatLit(0).s), precCond, ir.KindValue}
	}
	return read, err
}

// kind is ir.KindOf(e), memoized.
func (r *renderer) kind(e ir.Expr) ir.Kind {
	if r.kinds == nil {
		r.kinds = ir.KindMemo{}
	}
	return r.kinds.Of(e)
}

// readsTensor reports whether e reads a tensor (or a local). Such a
// condition keeps && and ||: its left side may guard the read. Memoized
// per node, so a long chain of && costs linear time.
func (r *renderer) readsTensor(e ir.Expr) bool {
	if v, ok := r.reads[e]; ok {
		return v
	}
	if r.reads == nil {
		r.reads = map[ir.Expr]bool{}
	}
	v := false
	switch e := e.(type) {
	case *ir.Access:
		v = true
	case *ir.Unary:
		v = r.readsTensor(e.X)
	case *ir.Binary:
		v = r.readsTensor(e.X) || r.readsTensor(e.Y)
	case *ir.Call:
		v = slices.ContainsFunc(e.Args, r.readsTensor)
	case *ir.Where:
		v = r.readsTensor(e.Cond) || r.readsTensor(e.Then) || r.readsTensor(e.Else)
	}
	r.reads[e] = v
	return v
}
