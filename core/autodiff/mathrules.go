package autodiff

import (
	"math"

	"github.com/neoflow/neoflow/core/ir"
)

// unaryDerivative is d f(a) / d a for the one-argument functions of the
// math library beyond the table's first ones; false for another function.
// The step functions (floor, ceil, round, trunc, sign) have derivative 0,
// as in PyTorch, which differentiates them almost everywhere.
func unaryDerivative(fn ir.Func, a ir.Expr) (ir.Expr, bool) {
	one := flit(1)
	switch fn {
	case ir.FuncSin:
		return call(ir.FuncCos, a), true
	case ir.FuncCos:
		return neg(call(ir.FuncSin, a)), true
	case ir.FuncTan:
		t := call(ir.FuncTan, a)
		return add(one, mul(t, t)), true
	case ir.FuncAsin:
		return call(ir.FuncRsqrt, sub(one, mul(a, a))), true
	case ir.FuncAcos:
		return neg(call(ir.FuncRsqrt, sub(one, mul(a, a)))), true
	case ir.FuncAtan:
		return div(one, add(one, mul(a, a))), true
	case ir.FuncSinh:
		return call(ir.FuncCosh, a), true
	case ir.FuncCosh:
		return call(ir.FuncSinh, a), true
	case ir.FuncLog1p:
		return div(one, add(one, a)), true
	case ir.FuncExpm1:
		return call(ir.FuncExp, a), true
	case ir.FuncLog2:
		return div(one, mul(a, flit(math.Ln2))), true
	case ir.FuncExp2:
		return mul(call(ir.FuncExp2, a), flit(math.Ln2)), true
	case ir.FuncSoftplus:
		// torch's threshold: above 20 softplus is x, its derivative 1.
		return where(bin(ir.Gt, a, flit(20)), one, call(ir.FuncSigmoid, a)), true
	case ir.FuncFloor, ir.FuncCeil, ir.FuncRound, ir.FuncTrunc, ir.FuncSign, ir.FuncInt32, ir.FuncInt64:
		return zero(), true
	case ir.FuncFloat:
		return one, true
	}
	return nil, false
}
