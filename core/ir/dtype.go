package ir

import (
	"fmt"

	"github.com/pkg/errors"
)

// DType is the element type of an op's tensors once specialized.
type DType int

// The supported element types. A specialized op has one floating-point
// dtype (Spec.DType), which its floating-point tensors share. Float16 and
// BFloat16 are storage types: kernels (C and CUDA) load them into float32,
// compute and accumulate in float32, and round once when they store (see
// Compute). Int32, Int64 and Bool (a byte holding 0 or
// 1) are the element types of integer inputs (TensorDecl.DType): read as
// values they are converted to the compute type, read as indices (an
// indirect access) they are indices.
const (
	InvalidDType DType = iota
	Float32
	Float64
	Float16
	BFloat16
	Int32
	Int64
	Bool
)

// String returns the torch-style name: "float32", "float64", "float16",
// "bfloat16".
func (d DType) String() string {
	switch d {
	case Float32:
		return "float32"
	case Float64:
		return "float64"
	case Float16:
		return "float16"
	case BFloat16:
		return "bfloat16"
	case Int32:
		return "int32"
	case Int64:
		return "int64"
	case Bool:
		return "bool"
	}
	return fmt.Sprintf("dtype(%d)", int(d))
}

// Size is the element size in bytes.
func (d DType) Size() int {
	switch d {
	case Float32:
		return 4
	case Float64:
		return 8
	case Float16, BFloat16:
		return 2
	case Int32:
		return 4
	case Int64:
		return 8
	case Bool:
		return 1
	}
	return 0
}

// Float reports a floating-point dtype, one a Spec can be specialized to.
func (d DType) Float() bool { return d >= Float32 && d <= BFloat16 }

// Integer reports an integer element type (Int32, Int64, Bool).
func (d DType) Integer() bool { return d >= Int32 && d <= Bool }

// Half reports a 16-bit storage type (Float16, BFloat16).
func (d DType) Half() bool { return d == Float16 || d == BFloat16 }

// Compute is the type a kernel computes in: float32 for the 16-bit
// types, the dtype itself otherwise.
func (d DType) Compute() DType {
	if d.Half() {
		return Float32
	}
	return d
}

// Significand is the number of significand bits of the dtype, the
// implicit one included (24 for float32): integers up to 2^Significand
// are stored exactly.
func (d DType) Significand() int {
	switch d {
	case Float32:
		return 24
	case Float64:
		return 53
	case Float16:
		return 11
	case BFloat16:
		return 8
	}
	return 0
}

// ParseDType maps a torch-style name to a DType.
func ParseDType(s string) (DType, error) {
	switch s {
	case "float32":
		return Float32, nil
	case "float64":
		return Float64, nil
	case "float16":
		return Float16, nil
	case "bfloat16":
		return BFloat16, nil
	case "int32":
		return Int32, nil
	case "int64":
		return Int64, nil
	case "bool":
		return Bool, nil
	}
	return InvalidDType, errors.Errorf("unsupported dtype %q: neoflow supports float32, float64, float16 and bfloat16, and int32, int64 and bool inputs", s)
}

// Kind classifies an expression's value.
type Kind int

// Expression kinds.
const (
	KindIndex Kind = iota // int64 arithmetic on indices
	KindValue             // floating point in the op's dtype
	KindBool              // result of a comparison or logical operator
)

func (k Kind) String() string {
	return [...]string{"index", "value", "bool"}[k]
}
