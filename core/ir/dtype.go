package ir

import (
	"fmt"

	"github.com/pkg/errors"
)

// DType is the element type of an op's tensors once specialized.
type DType int

// The supported element types. Every tensor of a specialized op shares one
// dtype. Float16 and BFloat16 are storage types: kernels load them into
// float32, compute and accumulate in float32, and round once when they
// store (see Compute); only the CUDA backend runs them.
const (
	InvalidDType DType = iota
	Float32
	Float64
	Float16
	BFloat16
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
	}
	return 0
}

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
	}
	return InvalidDType, errors.Errorf("unsupported dtype %q: neoflow supports float32 and float64, and float16 and bfloat16 on CUDA", s)
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
