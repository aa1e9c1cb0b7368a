package ir

import "fmt"

// DType is the element type of an op's tensors once specialized.
type DType int

// The supported element types. Every tensor of a specialized op shares one
// dtype.
const (
	InvalidDType DType = iota
	Float32
	Float64
)

// String returns the torch-style name: "float32", "float64".
func (d DType) String() string {
	switch d {
	case Float32:
		return "float32"
	case Float64:
		return "float64"
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
	}
	return 0
}

// ParseDType maps "float32"/"float64" to a DType.
func ParseDType(s string) (DType, error) {
	switch s {
	case "float32":
		return Float32, nil
	case "float64":
		return Float64, nil
	}
	return InvalidDType, fmt.Errorf("unsupported dtype %q: neoflow supports float32 and float64", s)
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
