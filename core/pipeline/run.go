package pipeline

import (
	"github.com/pkg/errors"

	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/loops"
)

// Run runs the table's passes in order on u, up to and including the pass
// named last, skipping those that do not apply to u. Before any pass runs
// it checks that each pass to run finds the passes it needs done, either
// earlier in this run or on u before it; a pass that needs another first
// fails the run at its start. An error a pass returns names the pass:
// "pass specialize: ...". After each pass u.Dump, if set, receives the IR.
func Run(u *Unit, last string) error {
	plan, err := planFor(u, last)
	if err != nil {
		return err
	}
	return runPasses(u, plan)
}

// runPasses runs plan's passes on u in order, dumping and (NEOFLOW_CHECK)
// verifying after each.
func runPasses(u *Unit, plan []Pass) error {
	for _, p := range plan {
		if p.Applies != nil && !p.Applies(u) {
			continue
		}
		before := u.Dump.before(u, p)
		if err := p.Run(u); err != nil {
			u.Failed = p.Name
			return errors.Wrapf(err, "pass %s", p.Name)
		}
		u.markDone(p.Name)
		u.Dump.after(u, p, before)
		if checkIR {
			if err := verify(u, p); err != nil {
				return err
			}
		}
	}
	return nil
}

// planFor is the passes Run would run on u, checked.
func planFor(u *Unit, last string) ([]Pass, error) {
	end := indexOf(last)
	if end < 0 {
		return nil, errors.Errorf("pipeline: no pass named %q (passes: %v)", last, Passes())
	}
	done := map[string]bool{}
	for name := range u.done {
		done[name] = true
	}
	var plan []Pass
	for _, p := range passes[:end+1] {
		if p.Applies != nil && !p.Applies(u) {
			continue
		}
		for _, need := range p.After {
			if !done[need] {
				return nil, errors.Errorf("pipeline: pass %s needs pass %s first, which has not run on op %s", p.Name, need, u.Op.DisplayName())
			}
		}
		done[p.Name] = true
		plan = append(plan, p)
	}
	return plan, nil
}

// Within reports whether the named pass is part of the plan that ends
// with last (it stands at or before last in the table).
func Within(pass, last string) bool {
	i, end := indexOf(pass), indexOf(last)
	return i >= 0 && end >= 0 && i <= end
}

// indexOf is the named pass's place in the table; -1 when there is none.
func indexOf(name string) int {
	if i, ok := order[name]; ok {
		return i
	}
	return -1
}

// checkOrder checks a table: names are unique and every pass that a pass
// needs stands before it.
func checkOrder(table []Pass) error {
	seen := map[string]bool{}
	for _, p := range table {
		if p.Name == "" || p.Run == nil {
			return errors.Errorf("pass %q has no name or no function", p.Name)
		}
		if seen[p.Name] {
			return errors.Errorf("pass %s is listed twice", p.Name)
		}
		for _, need := range p.After {
			if !seen[need] {
				return errors.Errorf("pass %s needs %s, which does not come before it", p.Name, need)
			}
		}
		seen[p.Name] = true
	}
	return nil
}

// Lower runs the build passes on spec with the schedules sched gives (nil:
// the CPU defaults) and returns the loop nests.
func Lower(spec *ir.Spec, sched func(*ir.Spec, int) loops.Schedule) (*loops.Func, error) {
	u := FromSpec(spec)
	u.Sched = sched
	if err := Run(u, Build); err != nil {
		return nil, err
	}
	return u.Func, nil
}
