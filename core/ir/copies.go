package ir

// Copies gives the outputs of op that one statement sets to an input,
// element for element: O[i, j] = I[i, j], '=' with a plain read of the
// input through the statement's own variables in the same order, and no
// other statement writing O. The gradient of an add is such an op
// (d_X[i] = d_Y[i]): autograd may pass d_Y on as d_X, as PyTorch's own
// add does, instead of launching a kernel that copies it. Whether the
// copy covers all of I (the extents agree) depends on the shapes, which
// the caller checks.
func Copies(op *Op) map[string]string {
	inputs := make(map[string]bool, len(op.Inputs))
	for _, in := range op.Inputs {
		inputs[in] = true
	}
	writes := make(map[string]int)
	for _, s := range op.Stmts {
		writes[s.Tensor]++
	}
	outputs := make(map[string]bool)
	for _, out := range op.OutputNames() {
		outputs[out] = true
	}
	copies := make(map[string]string)
	for _, s := range op.Stmts {
		if !outputs[s.Tensor] || writes[s.Tensor] != 1 {
			continue
		}
		if in, ok := copyOf(s, inputs); ok {
			copies[s.Tensor] = in
		}
	}
	return copies
}

// copyOf is the input statement s copies, element for element. A where
// whose condition compares two integers and fails is its else branch:
// autodiff reads an input nothing else reads in such a branch,
// where(0 > 1, X[0], d_Y[i]), since an op reads each of its inputs.
func copyOf(s *Stmt, inputs map[string]bool) (string, bool) {
	rhs := s.RHS
	for {
		w, ok := rhs.(*Where)
		if !ok || !fails(w.Cond) {
			break
		}
		rhs = w.Else
	}
	a, ok := rhs.(*Access)
	if !ok || s.Reduce != Assign || a.Indirect || !inputs[a.Tensor] || len(a.Indices) != len(s.Indices) {
		return "", false
	}
	for k, x := range a.Indices {
		v, ok := x.(*Index)
		if !ok || v.Name != s.Indices[k].Name {
			return "", false
		}
	}
	return a.Tensor, true
}

// fails reports whether c compares two integer literals and does not hold.
func fails(c Expr) bool {
	b, ok := c.(*Binary)
	if !ok {
		return false
	}
	x, okx := b.X.(*IntLit)
	y, oky := b.Y.(*IntLit)
	if !okx || !oky {
		return false
	}
	switch b.Op {
	case Lt:
		return x.Value >= y.Value
	case Le:
		return x.Value > y.Value
	case Gt:
		return x.Value <= y.Value
	case Ge:
		return x.Value < y.Value
	case Eq:
		return x.Value != y.Value
	case Ne:
		return x.Value == y.Value
	}
	return false
}
