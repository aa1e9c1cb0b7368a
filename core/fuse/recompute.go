package fuse

import (
	"fmt"
	"slices"
	"strings"

	"github.com/neoflow/neoflow/core/ir"
)

// Recompute chooses, by the reward, which forward temporaries a saving
// gradient op recomputes instead of reading them saved
// (autodiff.GradRecomputing): saved lists the tensors the gradient op
// would read saved (autodiff.GradSaving's Saved, forward order), and
// refuse gives the reason a temporary must stay saved whatever the reward
// ("" when there is none): the gradient compares it with == or != (a
// recomputed value may round differently from the one it is compared
// with), or would store it again rather than compute it where it reads it
// (pipeline.Recompute finds out). It returns the names to recompute and
// one note per candidate.
//
// A candidate is a saved temporary that one '=' statement without
// reduction axes writes whole. Recomputing
// it saves its store in the forward kernel and its load in the gradient
// (ΔT = 2 bytes each), costs its arithmetic again in the gradient (ΔC)
// and a load of each tensor it reads that is not saved anyway: a forward
// input or output once, a temporary twice (it must then be saved: a store
// and a load). Candidates are weighed last first, so that a temporary a
// recomputed one reads counts as saved when its own turn comes; one is
// recomputed when R > 0.
func Recompute(spec *ir.Spec, saved []string, refuse func(name string) string, m Machine) (map[string]bool, []string) {
	out := map[string]bool{}
	var notes []string
	have := map[string]bool{}
	for _, n := range saved {
		have[n] = true
	}
	size := int64(spec.DType.Size())
	for i := len(spec.Stmts) - 1; i >= 0; i-- {
		st := spec.Stmts[i]
		name := st.Stmt.Tensor
		td := spec.Tensor(name)
		if !have[name] || td == nil || td.Role != ir.RoleTemp || st.Stmt.Reduce != ir.Assign ||
			len(st.Reduction) > 0 || st.Offset != nil || len(writers(spec.Stmts, name)) != 1 {
			continue
		}
		if why := refuse(name); why != "" {
			notes = append(notes, fmt.Sprintf("saved: %s stays saved for the gradient: %s", name, why))
			continue
		}
		traffic := 2 * size * td.Elems()
		var extra []string
		for _, r := range readNames(st.Stmt.RHS) {
			rd := spec.Tensor(r)
			if rd == nil || have[r] {
				continue
			}
			switch rd.Role {
			case ir.RoleTemp:
				traffic -= 2 * size * rd.Elems()
				extra = append(extra, r)
			default:
				traffic -= size * rd.Elems()
			}
		}
		rw := m.reward(traffic, -(m.Cost(st.Stmt.RHS)-accesses(st.Stmt.RHS))*st.Points(), 0)
		if rw.R <= 0 {
			notes = append(notes, fmt.Sprintf("saved: %s stays saved for the gradient: %v", name, rw))
			continue
		}
		out[name] = true
		delete(have, name)
		for _, r := range extra {
			have[r] = true
		}
		notes = append(notes, fmt.Sprintf("recomputed: the gradient computes %s again from %s: %v", name, strings.Join(readNames(st.Stmt.RHS), ", "), rw))
	}
	slices.Reverse(notes)
	return out, notes
}

// readNames lists the tensors e reads, each once, in order of first read.
func readNames(e ir.Expr) []string {
	var out []string
	ir.Walk(e, func(x ir.Expr) bool {
		if a, ok := x.(*ir.Access); ok && !slices.Contains(out, a.Tensor) {
			out = append(out, a.Tensor)
		}
		return true
	})
	return out
}
