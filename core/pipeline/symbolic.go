package pipeline

import (
	"github.com/pkg/errors"

	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/loops"
	"github.com/neoflow/neoflow/core/sema"
)

// Symbolic lowers one CPU kernel for every value of sizes: a and b are an
// op specialized (unfused) at two shapes of its inputs that differ only in
// the dimensions sizes name, each size A in a and B in b. Every access is
// proven in bounds for every size of at least 1 (sema.ProveSymbolic), each
// statement is lowered under loops.SymbolicSchedule at both shapes with
// the same schedules, and the two loop nests are generalized
// (loops.Generalize): the kernel takes the sizes' values as one more
// buffer. An error says why the op has no such kernel; its caller then
// builds a kernel per shape.
func Symbolic(a, b *ir.Spec, sizes []loops.Size) (*loops.Func, error) {
	dims, err := inputSizes(a, b, sizes)
	if err != nil {
		return nil, err
	}
	syms, err := sema.ProveSymbolic(a, dims, nil)
	if err != nil {
		return nil, err
	}
	scheds := make([]loops.Schedule, len(a.Stmts))
	for i := range a.Stmts {
		sym := map[string]bool{}
		for v := range syms[i] {
			sym[v] = true
		}
		scheds[i] = loops.SymbolicSchedule(a, i, sym)
	}
	var fns [2]*loops.Func
	for k, spec := range []*ir.Spec{a, b} {
		u := FromSpec(spec)
		u.Target, u.Sched = CPU, Given(scheds)
		if err := Run(u, Build); err != nil {
			return nil, err
		}
		fns[k] = u.Func
	}
	if err := checkVarying(a, b, sizes, syms); err != nil {
		return nil, err
	}
	return loops.Generalize(fns[0], fns[1], sizes)
}

// inputSizes names each input dimension of a that is a size: its value
// in a and b is that size's pair. Every other dimension must be equal in
// a and b, and every size must name some input dimension.
func inputSizes(a, b *ir.Spec, sizes []loops.Size) (map[string][]string, error) {
	byPair := map[[2]int64]string{}
	for _, s := range sizes {
		byPair[[2]int64{s.A, s.B}] = s.Name
	}
	used := map[string]bool{}
	dims := map[string][]string{}
	ia, ib := a.InputsDecl(), b.InputsDecl()
	if len(ia) != len(ib) {
		return nil, errors.New("symbolic extents: the two specializations have different inputs")
	}
	for i, t := range ia {
		u := ib[i]
		if t.Name != u.Name || len(t.Shape) != len(u.Shape) {
			return nil, errors.Errorf("symbolic extents: input %d is %s%s and %s%s", i, t.Name, ir.ShapeString(t.Shape), u.Name, ir.ShapeString(u.Shape))
		}
		names := make([]string, len(t.Shape))
		for d := range t.Shape {
			if t.Shape[d] == u.Shape[d] {
				continue
			}
			s, ok := byPair[[2]int64{t.Shape[d], u.Shape[d]}]
			if !ok {
				return nil, errors.Errorf("symbolic extents: dimension %d of input %s is %d and %d, no size's values", d, t.Name, t.Shape[d], u.Shape[d])
			}
			names[d], used[s] = s, true
		}
		dims[t.Name] = names
	}
	for _, s := range sizes {
		if !used[s.Name] {
			return nil, errors.Errorf("symbolic extents: size %s is no input's dimension", s.Name)
		}
	}
	return dims, nil
}

// checkVarying checks that every statement variable whose extent differs
// between a and b is one the bounds proof gave the size of that pair as
// its extent (syms, per statement): the proof covers every extent that
// varies, so every loop that runs to a size.
func checkVarying(a, b *ir.Spec, sizes []loops.Size, syms []map[string]string) error {
	byPair := map[[2]int64]string{}
	for _, s := range sizes {
		byPair[[2]int64{s.A, s.B}] = s.Name
	}
	if len(a.Stmts) != len(b.Stmts) {
		return errors.New("symbolic extents: the two specializations have different statements")
	}
	for i, st := range a.Stmts {
		vb := append(append([]ir.Var{}, b.Stmts[i].Spatial...), b.Stmts[i].Reduction...)
		for k, v := range append(append([]ir.Var{}, st.Spatial...), st.Reduction...) {
			if k >= len(vb) || vb[k].Name != v.Name {
				return errors.Errorf("symbolic extents: statement %d has other variables at the other shape", i)
			}
			if v.Extent != vb[k].Extent && syms[i][v.Name] != byPair[[2]int64{v.Extent, vb[k].Extent}] {
				return errors.Errorf("symbolic extents: variable %s of statement %d (%s) runs to %d and %d, which the bounds proof did not cover", v.Name, i, st.Stmt.Tensor, v.Extent, vb[k].Extent)
			}
		}
	}
	return nil
}
