package pipeline

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/neoflow/neoflow/core/autodiff"
	"github.com/neoflow/neoflow/core/fuse"
	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/sema"
)

// saveOrRecompute decides, for a specialized op with fusion on, which
// forward temporaries its saving gradient ops compute again instead of
// reading them saved (Recompute), Spec -> Spec with the decision: it
// writes u.Recompute, which autodiff reads, and for a forward kernel whose
// temporaries a gradient reads (u.KeepSaved) adds those temporaries to
// u.Keep, so that the fusion passes leave them whole (savedTemps). Its
// notes say what is kept and why each temporary is saved or recomputed.
// The spec itself is unchanged.
func saveOrRecompute(u *Unit) error {
	rec, notes := Recompute(u.Spec)
	u.Recompute = rec
	if u.KeepSaved {
		if u.Keep == nil {
			u.Keep = map[string]bool{}
		}
		kept := savedTemps(u.Spec, rec)
		for name := range kept {
			u.Keep[name] = true
		}
		if len(kept) > 0 {
			notes = append([]string{"kept whole for the saving gradient: " + strings.Join(slices.Sorted(maps.Keys(kept)), ", ")}, notes...)
		}
	}
	if u.FusionNotes == nil {
		u.FusionNotes = map[string][]string{}
	}
	u.FusionNotes["save-or-recompute"] = notes
	return nil
}

// wantsDecision: save-or-recompute runs with fusion on, for a forward
// kernel that keeps what its gradients read or for a saving gradient.
func wantsDecision(u *Unit) bool {
	return u.Fusion && (u.KeepSaved || u.Wrt != nil && u.Save)
}

// savedTemps names the temporaries of spec that a saving gradient op of
// it reads (autodiff.GradRecomputing's Saved, recomputing rec) for the
// gradient with respect to every input and to each input alone: the
// gradient of a set of inputs is made of the statements the gradients of
// each need. When a gradient does not derive, every temporary is kept.
func savedTemps(spec *ir.Spec, rec map[string]bool) map[string]bool {
	keep := map[string]bool{}
	n := len(spec.Op.Inputs)
	if n == 0 {
		return keep
	}
	wrts := [][]bool{make([]bool, n)}
	for i := range n {
		wrts[0][i] = true
		if n > 1 {
			one := make([]bool, n)
			one[i] = true
			wrts = append(wrts, one)
		}
	}
	for _, wrt := range wrts {
		g, err := autodiff.GradRecomputing(spec, wrt, rec)
		if err != nil {
			for _, t := range spec.Tensors {
				if t.Role == ir.RoleTemp {
					keep[t.Name] = true
				}
			}
			return keep
		}
		for _, name := range g.Saved {
			if t := spec.Tensor(name); t != nil && t.Role == ir.RoleTemp {
				keep[name] = true
			}
		}
	}
	return keep
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
