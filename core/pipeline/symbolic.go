package pipeline

import (
	"reflect"
	"slices"

	"github.com/pkg/errors"

	"github.com/neoflow/neoflow/core/bounds"
	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/loops"
	"github.com/neoflow/neoflow/core/sema"
)

// SpecAt specializes one op with each size variable at the value values
// gives it (by name), as its caller's inputs and extents follow from the
// sizes. The spec may be fused; one in which a statement writes part of a
// tensor (fuse-split) gets no kernel (sema.ProveSymbolic refuses it).
type SpecAt func(values map[string]int64) (*ir.Spec, error)

// Symbolic lowers one kernel for target (CPU or GPU) for every value of
// sizes. The op is specialized at the sizes' A values and at their B
// values; every access is proven in bounds for every size of at least 1
// (sema.ProveSymbolic), or for the sizes that meet launch guards
// (Func.Guards) that hold at both, each statement is lowered under
// loops.SymbolicSchedule (for the GPU loops.SymbolicGPUSchedule) at both
// with the same schedules, and the two loop nests are generalized
// (loops.Generalize): the kernel takes the sizes' values at launch. The op
// is then specialized and lowered at a third value of each size, and
// generalizing against that must give the same kernel: an extent that
// followed from another size by chance at the first two (n / 4 where
// another size was a quarter of n at both) cannot pass for that size at
// three. An error says why the op has no such kernel; its caller then
// builds a kernel per shape.
func Symbolic(at SpecAt, sizes []loops.Size, target Target) (*loops.Func, error) {
	p, err := PrepareSymbolic(at, sizes, target)
	if err != nil {
		return nil, err
	}
	return p.Lower(p.Defaults())
}

// SymbolicPlan is an op specialized and proven for a kernel with symbolic
// extents (PrepareSymbolic), to be lowered under schedules of its
// caller's choice (Lower): the default ones, or a tuner's candidates.
type SymbolicPlan struct {
	sizes  []loops.Size
	target Target
	specs  [3]*ir.Spec
	// syms maps, per statement, each variable of symbolic extent to its
	// size (without loops.SizePrefix).
	syms   []map[string]string
	guards []bounds.Guard
}

// PrepareSymbolic specializes the op at the sizes' A values, their B
// values and a third value, and proves its accesses in bounds for every
// size (or under launch guards that hold at A and B): Symbolic's work
// before scheduling.
func PrepareSymbolic(at SpecAt, sizes []loops.Size, target Target) (*SymbolicPlan, error) {
	byPair, err := loops.CheckSizes(sizes)
	if err != nil {
		return nil, err
	}
	p := &SymbolicPlan{sizes: sizes, target: target}
	for k := range p.specs {
		values := map[string]int64{}
		for i, s := range sizes {
			values[s.Name] = [3]int64{s.A, s.B, thirdValue(sizes, i)}[k]
		}
		spec, err := at(values)
		if err != nil {
			return nil, err
		}
		p.specs[k] = spec
	}
	a, b := p.specs[0], p.specs[1]
	dims, err := inputSizes(a, b, sizes, byPair)
	if err != nil {
		return nil, err
	}
	vary, err := varying(a, b, byPair)
	if err != nil {
		return nil, err
	}
	syms, guards, err := sema.ProveSymbolic(a, dims, nil, vary)
	if err != nil {
		return nil, err
	}
	if p.guards, err = launchGuards(guards, sizes); err != nil {
		return nil, err
	}
	if err := checkVarying(vary, syms); err != nil {
		return nil, err
	}
	p.syms = syms
	return p, nil
}

// Spec is the op specialized at the sizes' A values, whose statements
// Lower's schedules are for.
func (p *SymbolicPlan) Spec() *ir.Spec { return p.specs[0] }

// Sym maps the variables of statement i that run to a size to that size
// (without loops.SizePrefix).
func (p *SymbolicPlan) Sym(i int) map[string]string { return p.syms[i] }

// Defaults is one default schedule per statement: loops.SymbolicSchedule,
// or for the GPU loops.SymbolicGPUSchedule.
func (p *SymbolicPlan) Defaults() []loops.Schedule {
	a := p.specs[0]
	scheds := make([]loops.Schedule, len(a.Stmts))
	for i := range a.Stmts {
		scheds[i] = loops.SymbolicSchedule(a, i, p.syms[i])
		if p.target == GPU {
			scheds[i] = loops.SymbolicGPUSchedule(a, i)
		}
	}
	return scheds
}

// Candidates is the distinct whole-kernel schedules a size bucket's
// kernel is picked among (autotune.PickSymbolic): variant k
// (loops.SymbolicVariants) of every statement, the defaults first. Not
// every candidate lowers (Lower says so). They are CPU schedules.
func (p *SymbolicPlan) Candidates() [][]loops.Schedule {
	a := p.specs[0]
	variants := make([][]loops.Schedule, len(a.Stmts))
	for i := range a.Stmts {
		variants[i] = loops.SymbolicVariants(a, i, p.syms[i])
	}
	var out [][]loops.Schedule
	for k := range variants[0] {
		c := make([]loops.Schedule, len(a.Stmts))
		for i := range c {
			c[i] = variants[i][k]
		}
		if !slices.ContainsFunc(out, func(o []loops.Schedule) bool { return reflect.DeepEqual(o, c) }) {
			out = append(out, c)
		}
	}
	return out
}

// Lower lowers the kernel under scheds (one per statement) at the three
// specializations and generalizes the loop nests (loops.Generalize): the
// first two give the kernel, which the third must give too.
func (p *SymbolicPlan) Lower(scheds []loops.Schedule) (*loops.Func, error) {
	if len(scheds) != len(p.specs[0].Stmts) {
		return nil, errors.Errorf("symbolic extents: %d schedules for %d statements", len(scheds), len(p.specs[0].Stmts))
	}
	var fns [3]*loops.Func
	for k, spec := range p.specs {
		u := FromSpec(spec)
		u.Target, u.Sched = p.target, Given(scheds)
		if err := Run(u, Build); err != nil {
			return nil, err
		}
		fns[k] = u.Func
	}
	fn, err := loops.Generalize(fns[0], fns[1], p.sizes)
	if err != nil {
		return nil, err
	}
	third := slices.Clone(p.sizes)
	for i := range third {
		third[i].B = thirdValue(p.sizes, i)
	}
	check, err := loops.Generalize(fns[0], fns[2], third)
	if err != nil || !reflect.DeepEqual(fn, check) {
		return nil, errors.Errorf("symbolic extents: the kernel lowered at a third value of the sizes differs (%v)", err)
	}
	fn.Guards = p.guards
	return fn, nil
}

// launchGuards are the distinct guards of the bounds proof, each checked
// at both values of the sizes: a kernel whose guard fails at a shape it is
// built from would serve neither.
func launchGuards(guards []bounds.Guard, sizes []loops.Size) ([]bounds.Guard, error) {
	a, b := map[string]int64{}, map[string]int64{}
	for _, s := range sizes {
		a[loops.SizePrefix+s.Name], b[loops.SizePrefix+s.Name] = s.A, s.B
	}
	var out []bounds.Guard
	seen := map[string]bool{}
	for _, g := range guards {
		if !g.Holds(a) || !g.Holds(b) {
			return nil, errors.Errorf("symbolic extents: the launch guard %s fails at the sizes the kernel is built from", g)
		}
		if !seen[g.String()] {
			seen[g.String()] = true
			out = append(out, g)
		}
	}
	return out, nil
}

// thirdValue is the value size i takes in Symbolic's third
// specialization: above every value the sizes had, and apart from the
// others' third values.
func thirdValue(sizes []loops.Size, i int) int64 {
	top := int64(0)
	for _, s := range sizes {
		top = max(top, s.A, s.B)
	}
	return top + 101 + 37*int64(i)
}

// inputSizes names each input dimension of a that is a size: its value
// in a and b is that size's pair (byPair, loops.CheckSizes). Every other
// dimension must be equal in a and b, and every size must name some input
// dimension.
func inputSizes(a, b *ir.Spec, sizes []loops.Size, byPair map[[2]int64]string) (map[string][]string, error) {
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

// varying names, per statement, the variables whose extent differs
// between a and b, with the size of that pair of extents (byPair); an
// error when a pair is no size's.
func varying(a, b *ir.Spec, byPair map[[2]int64]string) ([]map[string]string, error) {
	if len(a.Stmts) != len(b.Stmts) {
		return nil, errors.New("symbolic extents: the two specializations have different statements")
	}
	out := make([]map[string]string, len(a.Stmts))
	for i, st := range a.Stmts {
		out[i] = map[string]string{}
		va, vb := st.Vars(), b.Stmts[i].Vars()
		if len(va) != len(vb) {
			return nil, errors.Errorf("symbolic extents: statement %d has other variables at the other shape", i)
		}
		for k, v := range va {
			if vb[k].Name != v.Name {
				return nil, errors.Errorf("symbolic extents: statement %d has other variables at the other shape", i)
			}
			if v.Extent == vb[k].Extent {
				continue
			}
			s, ok := byPair[[2]int64{v.Extent, vb[k].Extent}]
			if !ok {
				return nil, errors.Errorf("symbolic extents: variable %s of statement %d (%s) runs to %d and %d, no size's values", v.Name, i, st.Stmt.Tensor, v.Extent, vb[k].Extent)
			}
			out[i][v.Name] = s
		}
	}
	return out, nil
}

// checkVarying checks that the bounds proof gave every variable in vary
// (per statement, those whose extent differs between the two shapes) its
// size as extent (syms): the proof covers every extent that varies, so
// every loop that runs to a size.
func checkVarying(vary, syms []map[string]string) error {
	for i, vars := range vary {
		for v, s := range vars {
			if syms[i][v] != s {
				return errors.Errorf("symbolic extents: variable %s of statement %d runs to size %s, which the bounds proof did not cover", v, i, s)
			}
		}
	}
	return nil
}
