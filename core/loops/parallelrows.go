package loops

// ParallelRows is the "parallel-rows" pass: a nest that FuseNests made of
// statements each below MinParallelWork, so that each runs serially, runs
// its shared outer loop in parallel when their points together reach it
// and its iterations are independent:
//
//	for n < 50 {                           parallel for n < 50 {
//	  { M[n] max= X[n, j] }                  { M[n] max= X[n, j] }
//	  { E[n, j] = exp(X[n, j] - M[n]) }  =>  { E[n, j] = exp(X[n, j] - M[n]) }
//	  { S[n] += E[n, j] }                    { S[n] += E[n, j] }
//	  { Y[n, j] = E[n, j] / S[n] }           { Y[n, j] = E[n, j] / S[n] }
//	}                                      }
//
// A softmax over 50 rows of 512 is 25,600 points a statement, each too
// little for a team of threads alone, but 102,400 in its one fused pass:
// on two threads it ran in 12 us against 20 serially (2-core Xeon, beside
// PyTorch's own operators), where PyTorch's ran in 11.
//
// The iterations are independent when every tensor the body writes is
// accessed (read and written) only in the slice of the outer variable:
// the same dimension indexed by exactly it in every access (sliced, as
// FuseNests requires between its members). Kernels with symbolic extents
// decide at launch (kernels/cgen) and are left alone, as are nests with a
// parallel, vector or GPU loop already.
func ParallelRows(fn *Func) *Func {
	if fn.Sizes != nil {
		return fn
	}
	for _, n := range fn.Nests {
		if len(n.Members) < 2 || !n.cpuLoops() || len(n.Body) != 1 {
			continue
		}
		l, ok := n.Body[0].(*Loop)
		if !ok || l.Parallel || l.Vector || l.Bind != BindNone || l.Size != "" || l.Extent < 2 {
			continue
		}
		var work int64
		for _, m := range n.Members {
			work += fn.Spec.Stmts[m].Points()
		}
		if work < MinParallelWork || !plainCPU(l.Body) || anyParallel(l.Body) || !independent(l) {
			continue
		}
		l.Parallel, l.Collapse = true, 1
	}
	return fn
}

// independent reports whether the iterations of l touch disjoint slices of
// every tensor its body writes (ParallelRows).
func independent(l *Loop) bool {
	for _, u := range uses(l.Body) {
		if u.writes && !sliced(u.access, []string{l.Var}) {
			return false
		}
	}
	return true
}

// anyParallel reports whether a loop in nodes is parallel.
func anyParallel(nodes []Node) bool {
	for _, n := range nodes {
		switch n := n.(type) {
		case *Loop:
			if n.Parallel || anyParallel(n.Body) {
				return true
			}
		case *Block:
			if anyParallel(n.Body) {
				return true
			}
		case *If:
			if anyParallel(n.Body) {
				return true
			}
		}
	}
	return false
}
