package ir

// KindOf is the kind of an expression: comparisons and logical operators
// are KindBool; an arithmetic expression is a value when any operand is (an
// index mixed with a value is promoted); min, max, abs and where keep their
// operands' joint kind; accesses, float literals, float constants and every
// other function are values. It does not validate the expression: a bool
// used as a number is the checker's business (core/sema).
func KindOf(e Expr) Kind {
	switch e := e.(type) {
	case *IntLit, *Index:
		return KindIndex
	case *Const:
		if e.IsFloat {
			return KindValue
		}
		return KindIndex
	case *Unary:
		if e.Op == Not {
			return KindBool
		}
		return KindOf(e.X)
	case *Binary:
		if e.Op.IsCompare() || e.Op.IsLogic() {
			return KindBool
		}
		return JoinKinds(KindOf(e.X), KindOf(e.Y))
	case *Call:
		switch e.Fn {
		case FuncMin, FuncMax, FuncAbs:
			k := KindIndex
			for _, a := range e.Args {
				k = JoinKinds(k, KindOf(a))
			}
			return k
		}
		return KindValue
	case *Where:
		return JoinKinds(KindOf(e.Then), KindOf(e.Else))
	case *Access:
		if e.Indirect {
			return KindIndex
		}
	}
	return KindValue // *FloatLit, *Access
}

// JoinKinds is the kind of an arithmetic combination of two numeric kinds.
func JoinKinds(a, b Kind) Kind {
	if a == KindValue || b == KindValue {
		return KindValue
	}
	return KindIndex
}

// KindMemo memoizes KindOf by node pointer. KindOf recurses into the
// whole expression, so asking it at every node of a long expression is
// quadratic; with the memo each node's kind is computed once, from its
// operands' kinds. The expressions must not change while it is in use.
type KindMemo map[Expr]Kind

// Of is KindOf(e).
func (m KindMemo) Of(e Expr) Kind {
	if k, ok := m[e]; ok {
		return k
	}
	var k Kind
	switch e := e.(type) {
	case *Unary:
		k = KindBool
		if e.Op != Not {
			k = m.Of(e.X)
		}
	case *Binary:
		k = KindBool
		if !e.Op.IsCompare() && !e.Op.IsLogic() {
			k = JoinKinds(m.Of(e.X), m.Of(e.Y))
		}
	case *Call:
		k = KindValue
		switch e.Fn {
		case FuncMin, FuncMax, FuncAbs:
			k = KindIndex
			for _, a := range e.Args {
				k = JoinKinds(k, m.Of(a))
			}
		}
	case *Where:
		k = JoinKinds(m.Of(e.Then), m.Of(e.Else))
	default:
		k = KindOf(e) // a leaf or an access: no recursion
	}
	m[e] = k
	return k
}

// IsIndirect reports whether e is an indirect access (an index read from an
// index tensor).
func IsIndirect(e Expr) bool {
	a, ok := e.(*Access)
	return ok && a.Indirect
}
