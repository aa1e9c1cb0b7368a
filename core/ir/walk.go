package ir

// Contains reports whether e or one of its subexpressions satisfies
// match; the walk stops at the first that does.
func Contains(e Expr, match func(Expr) bool) bool {
	found := false
	Walk(e, func(x Expr) bool {
		found = found || match(x)
		return !found
	})
	return found
}

// Walk visits e and its subexpressions in pre-order (a node before its
// children, children left to right: access indices, call arguments, where's
// condition, then and else). If f returns false the node's children are
// skipped. A nil e is not visited.
func Walk(e Expr, f func(Expr) bool) {
	if e == nil || !f(e) {
		return
	}
	switch x := e.(type) {
	case *Access:
		for _, ix := range x.Indices {
			Walk(ix, f)
		}
	case *Unary:
		Walk(x.X, f)
	case *Binary:
		Walk(x.X, f)
		Walk(x.Y, f)
	case *Call:
		for _, a := range x.Args {
			Walk(a, f)
		}
	case *Where:
		Walk(x.Cond, f)
		Walk(x.Then, f)
		Walk(x.Else, f)
	}
}

// Rewrite rebuilds e bottom-up (post-order), in the style of Halide's
// IRMutator: the children of a node are rewritten first; if any of them
// changed, the node is shallow-copied (keeping its Pos and other fields) with
// the new children; then f is applied to that node and its result takes the
// node's place. f returns its argument to keep the node, or nil, which also
// means "keep".
//
// Nothing is modified in place: when f changes nothing, Rewrite returns the
// very same e (pointer-identical), and unchanged subtrees are shared between
// the input and the result. A nil e gives nil.
func Rewrite(e Expr, f func(Expr) Expr) Expr {
	if e == nil {
		return nil
	}
	n := e
	switch x := e.(type) {
	case *Access:
		if ixs, changed := rewriteList(x.Indices, f); changed {
			c := *x
			c.Indices = ixs
			n = &c
		}
	case *Unary:
		if y := Rewrite(x.X, f); y != x.X {
			c := *x
			c.X = y
			n = &c
		}
	case *Binary:
		a, b := Rewrite(x.X, f), Rewrite(x.Y, f)
		if a != x.X || b != x.Y {
			c := *x
			c.X, c.Y = a, b
			n = &c
		}
	case *Call:
		if args, changed := rewriteList(x.Args, f); changed {
			c := *x
			c.Args = args
			n = &c
		}
	case *Where:
		cond, then, els := Rewrite(x.Cond, f), Rewrite(x.Then, f), Rewrite(x.Else, f)
		if cond != x.Cond || then != x.Then || els != x.Else {
			c := *x
			c.Cond, c.Then, c.Else = cond, then, els
			n = &c
		}
	}
	if r := f(n); r != nil {
		return r
	}
	return n
}

// rewriteList rewrites each expression; it returns the original slice and
// false when none changed, else a new slice and true.
func rewriteList(es []Expr, f func(Expr) Expr) ([]Expr, bool) {
	var out []Expr
	for i, e := range es {
		r := Rewrite(e, f)
		if r != e && out == nil {
			out = make([]Expr, len(es))
			copy(out, es[:i])
		}
		if out != nil {
			out[i] = r
		}
	}
	if out == nil {
		return es, false
	}
	return out, true
}

// SubstIndex replaces index variables by expressions, all at once (a
// replacement is not substituted again); names missing from sub are kept.
func SubstIndex(e Expr, sub map[string]Expr) Expr {
	return Rewrite(e, func(n Expr) Expr {
		if x, ok := n.(*Index); ok {
			if r, ok := sub[x.Name]; ok {
				return r
			}
		}
		return nil
	})
}

// RenameTensors rewrites the tensor names of accesses through m.
func RenameTensors(e Expr, m func(string) string) Expr {
	return Rewrite(e, func(n Expr) Expr {
		if a, ok := n.(*Access); ok {
			if name := m(a.Tensor); name != a.Tensor {
				c := *a
				c.Tensor = name
				return &c
			}
		}
		return nil
	})
}
