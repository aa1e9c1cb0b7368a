package interp

import (
	"math"

	"github.com/pkg/errors"

	"github.com/neoflow/neoflow/core/ir"
)

// Compiled expression forms. env holds the current value of each index
// variable of the statement, by slot.
type (
	indexFn func(env []int64) int64
	valueFn func(env []int64) float64
	boolFn  func(env []int64) bool
)

// runtimeError is raised (by panic) inside compiled closures and recovered
// by Run, so that the closures stay free of error plumbing.
type runtimeError struct{ err error }

// compiler turns one statement's right-hand side into closures.
type compiler struct {
	slots   map[string]int // index variable -> env slot
	tensors map[string]*buffer
	// kinds memoizes ir.KindOf: asked at every node, the unmemoized form
	// is quadratic in a long chain (X[i] * X[i] * ... * X[i]).
	kinds ir.KindMemo
}

// kind is ir.KindOf(e), memoized.
func (c *compiler) kind(e ir.Expr) ir.Kind {
	if c.kinds == nil {
		c.kinds = ir.KindMemo{}
	}
	return c.kinds.Of(e)
}

// buffer is a tensor's storage and layout.
type buffer struct {
	decl    *ir.TensorDecl
	data    []float64
	strides []int64
}

func (c *compiler) index(e ir.Expr) (indexFn, error) {
	switch e := e.(type) {
	case *ir.Access:
		if !e.Indirect {
			break
		}
		f, err := c.access(e)
		if err != nil {
			return nil, err
		}
		return func(env []int64) int64 { return int64(f(env)) }, nil
	case *ir.IntLit:
		v := e.Value
		return func([]int64) int64 { return v }, nil
	case *ir.Const:
		if e.IsFloat {
			break
		}
		v := e.Int
		return func([]int64) int64 { return v }, nil
	case *ir.Index:
		slot, ok := c.slots[e.Name]
		if !ok {
			return nil, errors.Errorf("interp: index variable %s has no extent in the spec", e.Name)
		}
		return func(env []int64) int64 { return env[slot] }, nil
	case *ir.Unary:
		if e.Op != ir.Neg {
			break
		}
		x, err := c.index(e.X)
		if err != nil {
			return nil, err
		}
		return func(env []int64) int64 { return -x(env) }, nil
	case *ir.Binary:
		x, err := c.index(e.X)
		if err != nil {
			return nil, err
		}
		y, err := c.index(e.Y)
		if err != nil {
			return nil, err
		}
		switch e.Op {
		case ir.Add:
			return func(env []int64) int64 { return x(env) + y(env) }, nil
		case ir.Sub:
			return func(env []int64) int64 { return x(env) - y(env) }, nil
		case ir.Mul:
			return func(env []int64) int64 { return x(env) * y(env) }, nil
		case ir.Div, ir.Mod:
			f := ir.FloorDiv
			if e.Op == ir.Mod {
				f = ir.FloorMod
			}
			text := ir.ExprString(e)
			return func(env []int64) int64 {
				d := y(env)
				if d == 0 {
					panic(runtimeError{errors.Errorf("interp: division by zero in %s", text)})
				}
				return f(x(env), d)
			}, nil
		}
	case *ir.Call:
		args, err := c.indexList(e.Args)
		if err != nil {
			return nil, err
		}
		switch {
		case e.Fn == ir.FuncAbs && len(args) == 1:
			return func(env []int64) int64 { return absInt(args[0](env)) }, nil
		case e.Fn == ir.FuncMin && len(args) == 2:
			return func(env []int64) int64 { return min(args[0](env), args[1](env)) }, nil
		case e.Fn == ir.FuncMax && len(args) == 2:
			return func(env []int64) int64 { return max(args[0](env), args[1](env)) }, nil
		}
	case *ir.Where:
		cond, err := c.bool(e.Cond)
		if err != nil {
			return nil, err
		}
		then, err := c.index(e.Then)
		if err != nil {
			return nil, err
		}
		els, err := c.index(e.Else)
		if err != nil {
			return nil, err
		}
		return func(env []int64) int64 {
			if cond(env) {
				return then(env)
			}
			return els(env)
		}, nil
	}
	return nil, errors.Errorf("interp: %s is not an index expression", ir.ExprString(e))
}

func (c *compiler) indexList(es []ir.Expr) ([]indexFn, error) {
	out := make([]indexFn, len(es))
	for i, e := range es {
		f, err := c.index(e)
		if err != nil {
			return nil, err
		}
		out[i] = f
	}
	return out, nil
}

// value compiles a numeric expression; index expressions are promoted.
func (c *compiler) value(e ir.Expr) (valueFn, error) {
	switch k := c.kind(e); k {
	case ir.KindIndex:
		f, err := c.index(e)
		if err != nil {
			return nil, err
		}
		return func(env []int64) float64 { return float64(f(env)) }, nil
	case ir.KindBool:
		return nil, errors.Errorf("interp: a bool cannot be used as a value: %s", ir.ExprString(e))
	}
	switch e := e.(type) {
	case *ir.FloatLit:
		v := e.Value
		return func([]int64) float64 { return v }, nil
	case *ir.Const:
		v := e.Float
		return func([]int64) float64 { return v }, nil
	case *ir.Access:
		return c.access(e)
	case *ir.Unary:
		x, err := c.value(e.X)
		if err != nil {
			return nil, err
		}
		return func(env []int64) float64 { return -x(env) }, nil
	case *ir.Binary:
		x, err := c.value(e.X)
		if err != nil {
			return nil, err
		}
		y, err := c.value(e.Y)
		if err != nil {
			return nil, err
		}
		switch e.Op {
		case ir.Add:
			return func(env []int64) float64 { return x(env) + y(env) }, nil
		case ir.Sub:
			return func(env []int64) float64 { return x(env) - y(env) }, nil
		case ir.Mul:
			return func(env []int64) float64 { return x(env) * y(env) }, nil
		case ir.Div:
			return func(env []int64) float64 { return x(env) / y(env) }, nil
		case ir.Mod:
			return func(env []int64) float64 { return valueMod(x(env), y(env)) }, nil
		}
	case *ir.Call:
		args := make([]valueFn, len(e.Args))
		for i, a := range e.Args {
			f, err := c.value(a)
			if err != nil {
				return nil, err
			}
			args[i] = f
		}
		if len(args) != e.Fn.Arity() {
			return nil, errors.Errorf("interp: %s takes %d arguments, got %d", e.Fn, e.Fn.Arity(), len(args))
		}
		if len(args) == 2 {
			f2 := map[ir.Func]func(a, b float64) float64{ir.FuncPow: math.Pow, ir.FuncMin: minValue, ir.FuncMax: maxValue, ir.FuncAtan2: math.Atan2}[e.Fn]
			a, b := args[0], args[1]
			return func(env []int64) float64 { return f2(a(env), b(env)) }, nil
		}
		f1, ok := map[ir.Func]func(float64) float64{
			ir.FuncExp: math.Exp, ir.FuncLog: math.Log, ir.FuncSqrt: math.Sqrt, ir.FuncRsqrt: rsqrt,
			ir.FuncTanh: math.Tanh, ir.FuncSigmoid: sigmoid, ir.FuncRelu: relu, ir.FuncAbs: math.Abs, ir.FuncErf: math.Erf,
			ir.FuncSin: math.Sin, ir.FuncCos: math.Cos, ir.FuncTan: math.Tan, ir.FuncAsin: math.Asin, ir.FuncAcos: math.Acos,
			ir.FuncAtan: math.Atan, ir.FuncSinh: math.Sinh, ir.FuncCosh: math.Cosh, ir.FuncLog1p: math.Log1p,
			ir.FuncExpm1: math.Expm1, ir.FuncLog2: math.Log2, ir.FuncExp2: math.Exp2, ir.FuncSoftplus: softplus,
			ir.FuncFloor: math.Floor, ir.FuncCeil: math.Ceil, ir.FuncRound: math.RoundToEven, ir.FuncTrunc: math.Trunc,
			ir.FuncSign: sign, ir.FuncInt32: math.Trunc, ir.FuncInt64: math.Trunc, ir.FuncFloat: func(v float64) float64 { return v },
		}[e.Fn]
		if !ok {
			break
		}
		a := args[0]
		return func(env []int64) float64 { return f1(a(env)) }, nil
	case *ir.Where:
		cond, err := c.bool(e.Cond)
		if err != nil {
			return nil, err
		}
		then, err := c.value(e.Then)
		if err != nil {
			return nil, err
		}
		els, err := c.value(e.Else)
		if err != nil {
			return nil, err
		}
		return func(env []int64) float64 {
			if cond(env) {
				return then(env)
			}
			return els(env)
		}, nil
	}
	return nil, errors.Errorf("interp: cannot evaluate %s", ir.ExprString(e))
}

// access compiles a bounds-checked tensor read.
func (c *compiler) access(e *ir.Access) (valueFn, error) {
	b, ok := c.tensors[e.Tensor]
	if !ok {
		return nil, errors.Errorf("interp: tensor %s is not in the spec", e.Tensor)
	}
	if len(e.Indices) != len(b.decl.Shape) {
		return nil, errors.Errorf("interp: %s has rank %d but is accessed with %d indices", e.Tensor, len(b.decl.Shape), len(e.Indices))
	}
	idx, err := c.indexList(e.Indices)
	if err != nil {
		return nil, err
	}
	shape, strides, data := b.decl.Shape, b.strides, b.data
	return func(env []int64) float64 {
		off := int64(0)
		for d, f := range idx {
			v := f(env)
			if v < 0 || v >= shape[d] {
				panic(runtimeError{errors.Errorf("interp: access %s out of bounds: dimension %d index %d not in [0, %d)",
					ir.ExprString(e), d, v, shape[d])})
			}
			off += v * strides[d]
		}
		return data[off]
	}, nil
}

func (c *compiler) bool(e ir.Expr) (boolFn, error) {
	switch e := e.(type) {
	case *ir.Unary:
		if e.Op != ir.Not {
			break
		}
		x, err := c.bool(e.X)
		if err != nil {
			return nil, err
		}
		return func(env []int64) bool { return !x(env) }, nil
	case *ir.Binary:
		if e.Op.IsLogic() {
			x, err := c.bool(e.X)
			if err != nil {
				return nil, err
			}
			y, err := c.bool(e.Y)
			if err != nil {
				return nil, err
			}
			if e.Op == ir.And {
				return func(env []int64) bool { return x(env) && y(env) }, nil
			}
			return func(env []int64) bool { return x(env) || y(env) }, nil
		}
		if !e.Op.IsCompare() {
			break
		}
		if c.kind(e.X) == ir.KindIndex && c.kind(e.Y) == ir.KindIndex {
			x, err := c.index(e.X)
			if err != nil {
				return nil, err
			}
			y, err := c.index(e.Y)
			if err != nil {
				return nil, err
			}
			return compare(e.Op, x, y), nil
		}
		x, err := c.value(e.X)
		if err != nil {
			return nil, err
		}
		y, err := c.value(e.Y)
		if err != nil {
			return nil, err
		}
		return compare(e.Op, x, y), nil
	}
	return nil, errors.Errorf("interp: %s is not a bool expression", ir.ExprString(e))
}

// compare builds a comparison of two compiled operands of one type.
func compare[T int64 | float64](op ir.BinOp, x, y func([]int64) T) boolFn {
	switch op {
	case ir.Lt:
		return func(env []int64) bool { return x(env) < y(env) }
	case ir.Le:
		return func(env []int64) bool { return x(env) <= y(env) }
	case ir.Gt:
		return func(env []int64) bool { return x(env) > y(env) }
	case ir.Ge:
		return func(env []int64) bool { return x(env) >= y(env) }
	case ir.Eq:
		return func(env []int64) bool { return x(env) == y(env) }
	}
	return func(env []int64) bool { return x(env) != y(env) }
}
