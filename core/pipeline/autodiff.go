package pipeline

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/pkg/errors"

	"github.com/neoflow/neoflow/core/autodiff"
	"github.com/neoflow/neoflow/core/fuse"
	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/sema"
)

// differentiate derives the gradient op of the specialized op with respect
// to the inputs u.Wrt selects (autodiff.Grad, or with u.Save
// autodiff.GradRecomputing, which recomputes the temporaries Recompute
// chooses when u.Fusion is on and saves the rest): Spec -> Op. The unit's
// statement level becomes the gradient op, which is specialized afresh
// (with Grad.Sizes) when it is built.
func differentiate(u *Unit) error {
	var g *autodiff.GradOp
	var err error
	switch {
	case !u.Save:
		g, err = autodiff.Grad(u.Spec, u.Wrt)
	case u.Fusion:
		rec, _ := Recompute(u.Spec)
		g, err = autodiff.GradRecomputing(u.Spec, u.Wrt, rec)
	default:
		g, err = autodiff.GradSaving(u.Spec, u.Wrt)
	}
	if err != nil {
		return errors.Wrapf(err, "differentiating op %s", u.Op.DisplayName())
	}
	if g.Op.Name == "" {
		g.Op.Name = "grad_" + u.Op.DisplayName()
	}
	u.Grad, u.Op, u.Spec = g, g.Op, nil
	return nil
}

// Recompute is the save-or-recompute decision for the saving gradient
// ops of spec (fuse.Recompute): the forward temporaries
// they compute again instead of reading them saved, and the decision's
// notes. It is made once for the gradient with respect to every input, and
// the gradient with respect to any subset of the inputs recomputes the
// same names (autodiff.GradRecomputing), so that the forward kernel knows
// which temporaries to keep whatever gradient runs. A temporary the
// gradient compares exactly stays saved, and so does one the fused
// gradient would store again rather than compute where it reads it:
// recomputing then costs a nest that loads what the temporary is made of
// and stores it, against one load. Nil when the gradient does not derive.
//
// It is decided at fuse.DefaultMachine's rates, not this machine's: the
// saved temporaries are outputs of the forward kernel, which torch.compile
// bakes into the graphs it caches on disk under the op's name, so they
// must depend on neoflow's version and the op alone.
//
// The decision is a function of the specialized op alone, and a first call
// asks for it several times (the forward kernel, its shapes, the gradient):
// it is made once per specialization and kept (recomputeCache).
func Recompute(spec *ir.Spec) (map[string]bool, []string) {
	key := specIdentity(spec)
	if rec, notes, ok := recomputeCache.get(key); ok {
		return rec, notes
	}
	rec, notes := recompute(spec)
	recomputeCache.put(key, rec, notes)
	return maps.Clone(rec), slices.Clone(notes)
}

func recompute(spec *ir.Spec) (map[string]bool, []string) {
	m := fuse.DefaultMachine
	wrt := make([]bool, len(spec.Op.Inputs))
	for i := range wrt {
		wrt[i] = true
	}
	if len(wrt) == 0 {
		return nil, nil
	}
	g, err := autodiff.GradSaving(spec, wrt)
	if err != nil {
		return nil, nil
	}
	// The gradient op's last inputs are the saved tensors, in order.
	names := map[string]string{}
	for k, n := range g.Saved {
		names[n] = g.Op.Inputs[len(g.Op.Inputs)-len(g.Saved)+k]
	}
	stored := map[string]bool{}
	refuse := func(name string) string {
		switch {
		case slices.ContainsFunc(g.Op.Stmts, func(st *ir.Stmt) bool { return fuse.ComparesExactly(st.RHS, names[name]) }):
			return "the gradient compares it with == or !="
		case stored[name]:
			return "the fused gradient would store it again rather than compute it where it reads it"
		}
		return ""
	}
	for {
		rec, notes := fuse.Recompute(spec, g.Saved, refuse, m)
		more, err := storedAgain(spec, wrt, rec, m)
		if err != nil {
			return nil, nil
		}
		if len(more) == 0 {
			return rec, notes
		}
		for _, n := range more {
			stored[n] = true
		}
	}
}

// storedAgain lists the temporaries in rec that the fused gradient of
// spec, recomputing rec, stores rather than computes where it reads them.
func storedAgain(spec *ir.Spec, wrt []bool, rec map[string]bool, m fuse.Machine) ([]string, error) {
	if len(rec) == 0 {
		return nil, nil
	}
	g, err := autodiff.GradRecomputing(spec, wrt, rec)
	if err != nil {
		return nil, err
	}
	gs, err := sema.SpecializeTyped(g.Op, spec.DType, g.InputShapes(spec), g.Sizes, spec.IntInputs())
	if err != nil {
		return nil, err
	}
	f, err := Fuse(gs, fuse.Options{Machine: m})
	if err != nil {
		return nil, err
	}
	var out []string
	for fwd, name := range g.Recomputed {
		if slices.ContainsFunc(f.Stmts, func(st *ir.BoundStmt) bool { return st.Stmt.Tensor == name }) {
			out = append(out, fwd)
		}
	}
	slices.Sort(out)
	return out, nil
}

// wantsGrad: autodiff runs only when a gradient is asked for.
func wantsGrad(u *Unit) bool { return u.Wrt != nil }

// recomputeCache keeps the latest Recompute decisions, by specIdentity.
var recomputeCache = &decisions{m: map[string]decision{}}

// maxDecisions bounds recomputeCache: specializations past it are decided
// again when asked.
const maxDecisions = 512

type decision struct {
	rec   map[string]bool
	notes []string
}

// decisions is a bounded map, safe for concurrent use; when full it is
// emptied (a first call's several requests come close together).
type decisions struct {
	mu sync.Mutex
	m  map[string]decision
}

func (d *decisions) get(key string) (map[string]bool, []string, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	v, ok := d.m[key]
	return maps.Clone(v.rec), slices.Clone(v.notes), ok
}

func (d *decisions) put(key string, rec map[string]bool, notes []string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.m) >= maxDecisions {
		clear(d.m)
	}
	d.m[key] = decision{maps.Clone(rec), slices.Clone(notes)}
}

// specIdentity is everything of a specialized op that its gradient depends
// on: the printed spec (statements, axes, tensors and shapes) and each
// tensor's element type and index limit.
func specIdentity(spec *ir.Spec) string {
	var b strings.Builder
	b.WriteString(ir.PrintSpec(spec))
	for _, t := range spec.Tensors {
		fmt.Fprintf(&b, "|%s %s %d", t.Name, spec.ElemType(t), t.Limit)
	}
	return b.String()
}
