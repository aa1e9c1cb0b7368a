package ir

// Conjuncts splits a condition at its top-level && operators, left to
// right: a && (b && c) gives [a b c]. A condition without && is one
// conjunct.
func Conjuncts(c Expr) []Expr {
	if b, ok := c.(*Binary); ok && b.Op == And {
		return append(Conjuncts(b.X), Conjuncts(b.Y)...)
	}
	return []Expr{c}
}

// EqOperands gives the operands of an equality c in both orders, [[X, Y],
// [Y, X]], for matching a == b either way round; nil when c is not ==.
func EqOperands(c Expr) [][2]Expr {
	if b, ok := c.(*Binary); ok && b.Op == Eq {
		return [][2]Expr{{b.X, b.Y}, {b.Y, b.X}}
	}
	return nil
}

// AndAll joins conditions with &&, left associated, so they are evaluated
// left to right; nil for none.
func AndAll(cs []Expr) Expr {
	var out Expr
	for _, c := range cs {
		if out == nil {
			out = c
		} else {
			out = &Binary{Op: And, X: out, Y: c}
		}
	}
	return out
}
