package pipeline

import "github.com/neoflow/neoflow/core/sema"

// specialize fixes the op's dtype and input shapes, infers every other
// extent and proves every access in bounds (sema.Specialize): Op -> Spec.
func specialize(u *Unit) error {
	spec, err := sema.SpecializeTyped(u.Op, u.DType, u.Shapes, u.Sizes, u.Ints)
	if err != nil {
		return err
	}
	u.Spec = spec
	return nil
}

// needsSpec: a unit that already holds a Spec is not specialized again.
func needsSpec(u *Unit) bool { return u.Spec == nil }
