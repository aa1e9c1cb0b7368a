package torchbridge

import (
	"context"

	"github.com/neoflow/neoflow/autotune"
	"github.com/neoflow/neoflow/autotune/tunedb"
	"github.com/neoflow/neoflow/core/ir"
)

// tunedKernel is a forward kernel's finished tuner, kept (buffers and
// measurements) until its gradient kernel is tuned.
type tunedKernel struct {
	op    *ir.Op // the op registered (Define or Grad), not its specialization's
	tuner *autotune.Tuner
}

// keptForwards bounds the forward tuners kept (each holds its op's
// buffers): neoflow.tune tunes an op's gradient right after its forward,
// and a tuning session over a training step (neoflow.tune_session) tunes
// the forwards of up to this many ops before their gradients, in reverse.
const keptForwards = 16

// keepForward keeps the tuner of a kernel that is not a gradient op's
// (a gradient's own gradient is never paired) for its gradient's joint
// pass, closing the oldest kept beyond keptForwards; false when it was
// not kept (the caller closes it).
func (r *Runtime) keepForward(op *ir.Op, t *autotune.Tuner) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !t.CPU() || r.gradOf[op] != nil {
		return false
	}
	r.tunedFwd = append(r.tunedFwd, &tunedKernel{op: op, tuner: t})
	if len(r.tunedFwd) > keptForwards {
		r.tunedFwd[0].tuner.Close()
		r.tunedFwd = r.tunedFwd[1:]
	}
	return true
}

// tuneWithForward tunes the gradient kernel bwd of op (its search done) jointly
// with its forward kernel (autotune.TuneJointly) when that was tuned
// lately in this process, on the CPU, for the shapes bwd reads. When the
// pair changes the choices, the forward's record is replaced (the caller
// stores bwd's). It returns the pass's outcome (no pairs when nothing was
// paired).
func (r *Runtime) tuneWithForward(db *tunedb.DB, op *ir.Op, bwd *autotune.Tuner) (autotune.Joint, error) {
	if !bwd.CPU() {
		return autotune.Joint{}, nil
	}
	r.mu.Lock()
	fwdOp := r.gradOf[op]
	var fwd *tunedKernel
	at := -1
	for i := len(r.tunedFwd) - 1; i >= 0 && fwdOp != nil; i-- {
		if k := r.tunedFwd[i]; k.op == fwdOp && autotune.Pairs(k.tuner, bwd) {
			fwd, at = k, i
			break
		}
	}
	if fwd != nil {
		r.tunedFwd = append(r.tunedFwd[:at], r.tunedFwd[at+1:]...)
	}
	r.mu.Unlock()
	if fwd == nil {
		return autotune.Joint{}, nil
	}
	defer fwd.tuner.Close()
	j, err := autotune.TuneJointly(context.Background(), fwd.tuner, bwd)
	if err != nil {
		return j, err
	}
	if j.Changed {
		rec := fwd.tuner.Record()
		if _, err := db.Replace(rec); err != nil {
			return j, err
		}
		r.stored(db, rec)
	}
	return j, nil
}
