package pipeline

import (
	"os"

	"github.com/pkg/errors"

	"github.com/neoflow/neoflow/core/loops"
	"github.com/neoflow/neoflow/core/sema"
)

// checkIR is NEOFLOW_CHECK=1: Run verifies the IR after every pass.
var checkIR = os.Getenv("NEOFLOW_CHECK") == "1"

// verify checks the unit's IR at the level pass p left it at: an op checks
// (sema.Check), a specialized op is well formed and every access still
// proven in bounds (sema.CheckSpec), loop nests keep every access in their
// buffers (loops.CheckFunc). A failure is a bug in p.
func verify(u *Unit, p Pass) error {
	var err error
	switch p.Out {
	case LevelOp:
		if u.Op != nil {
			err = sema.Check(u.Op)
		}
	case LevelSpec, LevelFused, LevelScheduled:
		if u.Spec != nil {
			err = sema.CheckSpec(u.Spec)
		}
	case LevelLoops:
		if u.Func != nil {
			_, err = loops.CheckFunc(u.Func)
		}
	}
	if err != nil {
		return errors.Wrapf(err, "NEOFLOW_CHECK: the IR of op %s after pass %s does not check (a neoflow bug)", u.Op.DisplayName(), p.Name)
	}
	return nil
}
