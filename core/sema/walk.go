package sema

import (
	"slices"

	"github.com/neoflow/neoflow/core/ir"
)

// children lists the direct sub-expressions of e in source order.
func children(e ir.Expr) []ir.Expr {
	switch e := e.(type) {
	case *ir.Access:
		return e.Indices
	case *ir.Unary:
		return []ir.Expr{e.X}
	case *ir.Binary:
		return []ir.Expr{e.X, e.Y}
	case *ir.Call:
		return e.Args
	case *ir.Where:
		return []ir.Expr{e.Cond, e.Then, e.Else}
	}
	return nil
}

// accessRef is a tensor access found in a statement's right-hand side.
type accessRef struct {
	acc *ir.Access
	// guardVars are the index variables mentioned by the conditions of
	// the where expressions whose branches enclose the access.
	guardVars map[string]bool
	// guards are those conditions, outermost first, each negated for an
	// else branch.
	guards []guardCond
}

// guardCond is the condition of an enclosing where: the access runs where
// it holds (negate false) or where it does not (negate true).
type guardCond struct {
	cond   ir.Expr
	negate bool
}

// unguardedBy reports whether no enclosing guard mentions a variable of x:
// then the guards cannot restrict x, and whenever the access runs x takes
// every value its variables' ranges allow.
func (a accessRef) unguardedBy(x ir.Expr) bool {
	for _, v := range varNames(x) {
		if a.guardVars[v] {
			return false
		}
	}
	return true
}

// accesses lists the accesses of e in source order with the variables of
// their enclosing guards.
func accesses(e ir.Expr) []accessRef {
	var out []accessRef
	var rec func(e ir.Expr, guards map[string]bool, conds []guardCond)
	rec = func(e ir.Expr, guards map[string]bool, conds []guardCond) {
		switch e := e.(type) {
		case *ir.Access:
			out = append(out, accessRef{e, guards, conds})
		case *ir.Where:
			rec(e.Cond, guards, conds)
			inner := map[string]bool{}
			for v := range guards {
				inner[v] = true
			}
			for _, v := range varNames(e.Cond) {
				inner[v] = true
			}
			rec(e.Then, inner, append(slices.Clip(conds), guardCond{e.Cond, false}))
			rec(e.Else, inner, append(slices.Clip(conds), guardCond{e.Cond, true}))
			return
		}
		for _, c := range children(e) {
			rec(c, guards, conds)
		}
	}
	rec(e, nil, nil)
	return out
}

// indexUses lists the index-variable uses in e in source order.
func indexUses(e ir.Expr) []*ir.Index {
	var out []*ir.Index
	ir.Walk(e, func(e ir.Expr) bool {
		if x, ok := e.(*ir.Index); ok {
			out = append(out, x)
		}
		return true
	})
	return out
}

// varNames lists the distinct index variables of e in order of first use.
func varNames(e ir.Expr) []string {
	var out []string
	seen := map[string]bool{}
	for _, x := range indexUses(e) {
		if !seen[x.Name] {
			seen[x.Name] = true
			out = append(out, x.Name)
		}
	}
	return out
}
