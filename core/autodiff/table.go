package autodiff

import (
	"github.com/pkg/errors"

	"github.com/neoflow/neoflow/core/ir"
)

// The elementwise derivative table: for every node kind, the partial
// derivative of the node's value with respect to each value operand.
//
//	-a             d/da = -1
//	a + b, a - b   d/da = 1, d/db = ±1
//	a * b          d/da = b, d/db = a
//	a / b          d/da = 1/b, d/db = -a/(b*b)
//	a % b          d/da = 1, d/db = -floor(a/b) = -((a - a % b) / b)
//	exp(a)         exp(a)
//	log(a)         1/a
//	sqrt(a)        0.5/sqrt(a)
//	rsqrt(a)       -0.5 * rsqrt(a) / a
//	tanh(a)        1 - tanh(a)*tanh(a)
//	sigmoid(a)     sigmoid(a) * (1 - sigmoid(a))
//	relu(a)        where(a > 0, 1, 0): 0 at 0 (and at NaN)
//	abs(a)         sign(a): where(a > 0, 1, where(a < 0, -1, 0)), 0 at 0
//	pow(a, b)      d/da = b * pow(a, b - 1)
//	               d/db = where(a > 0, pow(a, b) * log(a), 0): no derivative
//	                      through a non-positive base
//	max(a, b)      to the operand the value rule selects (core/ir):
//	               a where a > b || a != a, else b (ties go to b)
//	min(a, b)      a where a < b || a != a, else b (ties go to b)
//	erf(a)         2/sqrt(pi) * exp(-(a*a))
//	where(c, t, e) to the taken branch; c gets none
//	comparisons, logic, index expressions: no derivative (zero)
//
// A where does not become a factor: the branch's derivative stays under
// the where's condition (a guard), so that the accesses it guards are
// never evaluated outside it (see occ.guards).

// twoOverSqrtPi is 2/sqrt(pi), the scale of erf's derivative.
const twoOverSqrtPi = 1.1283791670955126

// guard is an enclosing where condition of an access: the access sits in
// the then branch (neg false) or the else branch (neg true).
type guard struct {
	cond ir.Expr
	neg  bool
}

// occ is one occurrence of a tensor read in a right-hand side with the
// partial derivative of the right-hand side with respect to it: the
// product of the local derivatives along the path from the root (factor,
// nil for 1), valid where every guard on the path holds.
type occ struct {
	acc    *ir.Access
	guards []guard
	factor ir.Expr
}

// differ differentiates one right-hand side with respect to the reads of
// some tensors, in one walk (a statement may read thousands of tensors).
type differ struct {
	m *memo
	// out collects the occurrences of each tensor to differentiate.
	out map[string][]occ
	// chained marks the product nodes of chains whose factors were found
	// distinct (product.go): their operands are not flattened again.
	chained map[*ir.Binary]bool
}

// occurrences differentiates e with respect to every read of each tensor
// in ts: the occurrences by tensor. The partials share subexpressions
// (see size.go); m memoizes over the whole Grad call.
func occurrences(e ir.Expr, ts []string, m *memo) (map[string][]occ, error) {
	d := &differ{m: m, out: map[string][]occ{}, chained: map[*ir.Binary]bool{}}
	for _, t := range ts {
		d.out[t] = nil
	}
	if err := d.walk(e, nil, nil); err != nil {
		return nil, err
	}
	return d.out, nil
}

// walk records the reads of the tensors of d.out in e, where the partial
// of the whole right-hand side with respect to e is f (nil for 1) under
// the guards gs.
func (d *differ) walk(e ir.Expr, gs []guard, f ir.Expr) error {
	if d.m.kinds.Of(e) != ir.KindValue {
		return nil // index and bool subexpressions have no derivative
	}
	switch e := e.(type) {
	case *ir.Access:
		if list, ok := d.out[e.Tensor]; ok {
			d.out[e.Tensor] = append(list, occ{acc: e, guards: gs, factor: f})
		}
		return nil
	case *ir.FloatLit, *ir.Const:
		return nil
	case *ir.Unary:
		if e.Op == ir.Neg {
			return d.walk(e.X, gs, mul(f, flit(-1)))
		}
		return nil
	case *ir.Binary:
		a, b := e.X, e.Y
		var da, db ir.Expr // local partials; nil is 1
		switch e.Op {
		case ir.Add:
		case ir.Sub:
			db = flit(-1)
		case ir.Mul:
			if done, err := d.product(e, gs, f); done || err != nil {
				return err
			}
			da, db = b, a
		case ir.Div:
			da = div(nil, b)
			db = neg(div(a, mul(b, b)))
		case ir.Mod:
			db = neg(div(sub(a, bin(ir.Mod, a, b)), b))
		default:
			return nil // comparisons and logic: no derivative
		}
		if err := d.walk(a, gs, mul(f, da)); err != nil {
			return err
		}
		return d.walk(b, gs, mul(f, db))
	case *ir.Call:
		return walkCall(e, gs, f, d.walk)
	case *ir.Where:
		if err := d.walk(e.Then, appendGuard(gs, e.Cond, false), f); err != nil {
			return err
		}
		return d.walk(e.Else, appendGuard(gs, e.Cond, true), f)
	}
	return errors.Errorf("autodiff: no derivative rule for expression %s (%T)", ir.ExprString(e), e)
}

func appendGuard(gs []guard, c ir.Expr, neg bool) []guard {
	out := make([]guard, len(gs), len(gs)+1)
	copy(out, gs)
	return append(out, guard{c, neg})
}

// walkCall applies the table to a function call.
func walkCall(e *ir.Call, gs []guard, f ir.Expr, walk func(ir.Expr, []guard, ir.Expr) error) error {
	if len(e.Args) != e.Fn.Arity() {
		return errors.Errorf("autodiff: %s takes %d arguments, got %d", e.Fn, e.Fn.Arity(), len(e.Args))
	}
	a := e.Args[0]
	var d ir.Expr
	switch e.Fn {
	case ir.FuncExp:
		d = call(ir.FuncExp, a)
	case ir.FuncLog:
		d = div(nil, a)
	case ir.FuncSqrt:
		d = div(flit(0.5), call(ir.FuncSqrt, a))
	case ir.FuncRsqrt:
		d = div(mul(flit(-0.5), call(ir.FuncRsqrt, a)), a)
	case ir.FuncTanh:
		t := call(ir.FuncTanh, a)
		d = sub(flit(1), mul(t, t))
	case ir.FuncSigmoid:
		s := call(ir.FuncSigmoid, a)
		d = mul(s, sub(flit(1), s))
	case ir.FuncRelu:
		// PyTorch's: the incoming gradient but where a <= 0 (a NaN passes
		// it), and there exactly 0, even of an infinite one.
		return walk(a, gs, where(bin(ir.Le, a, flit(0)), zero(), mul(f, flit(1))))
	case ir.FuncAbs:
		d = where(bin(ir.Gt, a, flit(0)), flit(1), where(bin(ir.Lt, a, flit(0)), flit(-1), zero()))
	case ir.FuncErf:
		d = mul(flit(twoOverSqrtPi), call(ir.FuncExp, neg(mul(a, a))))
	case ir.FuncAtan2:
		// atan2(y, x): d/dy = x / (x² + y²), d/dx = -y / (x² + y²); 0 at
		// the origin, as in PyTorch, where the quotients are 0/0.
		x := e.Args[1]
		r2 := add(mul(a, a), mul(x, x))
		origin := bin(ir.Eq, r2, flit(0))
		if err := walk(a, gs, mul(f, where(origin, zero(), div(x, r2)))); err != nil {
			return err
		}
		return walk(x, gs, mul(f, where(origin, zero(), neg(div(a, r2)))))
	case ir.FuncPow:
		// PyTorch's values at the special points: d/da is 0 where b == 0
		// (not 0 * a^-1), d/db is 0 where a == 0 and b >= 0, and NaN for a
		// negative base (log a).
		b := e.Args[1]
		da := mul(b, call(ir.FuncPow, a, sub(b, flit(1))))
		if !nonzeroLit(b) {
			da = where(bin(ir.Eq, b, flit(0)), zero(), da)
		}
		if err := walk(a, gs, mul(f, da)); err != nil {
			return err
		}
		atZero := bin(ir.And, bin(ir.Eq, a, flit(0)), bin(ir.Ge, b, flit(0)))
		db := where(atZero, zero(), mul(call(ir.FuncPow, a, b), call(ir.FuncLog, a)))
		return walk(b, gs, mul(f, db))
	case ir.FuncMax, ir.FuncMin:
		// PyTorch's (maximum, minimum): a tie splits the gradient in
		// halves; a NaN on either side passes it to both.
		b := e.Args[1]
		loses := ir.Lt // a loses max(a, b) where a < b
		if e.Fn == ir.FuncMin {
			loses = ir.Gt
		}
		// The operand that loses gets exactly 0, even of an infinite
		// incoming gradient (PyTorch's masked_fill).
		share := func(x, y ir.Expr) ir.Expr { // f once: nested max and min do not double it per level
			return where(bin(loses, x, y), zero(), mul(f, where(bin(ir.Eq, x, y), flit(0.5), flit(1))))
		}
		if err := walk(a, gs, share(a, b)); err != nil {
			return err
		}
		return walk(b, gs, share(b, a))
	default:
		var ok bool
		if d, ok = unaryDerivative(e.Fn, a); !ok {
			return errors.Errorf("autodiff: no derivative rule for function %s", e.Fn)
		}
	}
	return walk(a, gs, mul(f, d))
}

// nest puts body under the guards, outermost first: each guard becomes
// where(c, body, 0) or, for an else branch, where(c, 0, body).
func nest(gs []guard, body ir.Expr) ir.Expr {
	for i := len(gs) - 1; i >= 0; i-- {
		if ir.IsZero(body) {
			return body
		}
		if gs[i].neg {
			body = where(gs[i].cond, zero(), body)
		} else {
			body = where(gs[i].cond, body, zero())
		}
	}
	return body
}

// group is the occurrences of one tensor that share an index tuple: they
// invert together.
type group struct {
	acc  *ir.Access
	occs []occ
}

func groupOccs(occs []occ) []*group {
	var out []*group
	byKey := map[string]*group{}
	for _, o := range occs {
		k := ir.ExprString(o.acc)
		g, ok := byKey[k]
		if !ok {
			g = &group{acc: o.acc}
			byKey[k] = g
			out = append(out, g)
		}
		g.occs = append(g.occs, o)
	}
	return out
}

// contribution is Σ over the group's occurrences of the reduction factor
// r times the occurrence's partial, each under its guards. Equal terms
// (found by interning, not by comparing trees) are collected into one
// with a count, in order of first appearance: the gradient of
// X[i] + X[i] + ... + X[i] (n terms) is n * d_Y[i].
func (g *group) contribution(r ir.Expr, m *memo) ir.Expr {
	var terms []ir.Expr
	count := map[int]int{}
	for _, o := range g.occs {
		t := nest(o.guards, mul(r, o.factor))
		if ir.IsZero(t) {
			continue
		}
		id := m.ids.id(t)
		if count[id] == 0 {
			terms = append(terms, t)
		}
		count[id]++
	}
	var sum ir.Expr = zero()
	for _, t := range terms {
		if n := count[m.ids.id(t)]; n > 1 {
			t = mul(flit(float64(n)), t)
		}
		sum = sumTerm(sum, t)
	}
	return sum
}

// sumTerm is add without its equality test (contribution has collected
// equal terms already): a + b, a - c for b = -c.
func sumTerm(a, b ir.Expr) ir.Expr {
	if ir.IsZero(a) {
		return b
	}
	if u, ok := b.(*ir.Unary); ok && u.Op == ir.Neg {
		return bin(ir.Sub, a, u.X)
	}
	return bin(ir.Add, a, b)
}

// nonzeroLit reports whether e is a literal or named constant other than 0.
func nonzeroLit(e ir.Expr) bool {
	switch x := e.(type) {
	case *ir.FloatLit:
		return x.Value != 0
	case *ir.IntLit:
		return x.Value != 0
	case *ir.Const:
		return x.IsFloat && x.Float != 0 || !x.IsFloat && x.Int != 0
	}
	return false
}
