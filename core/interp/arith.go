package interp

import "math"

// floorDiv is floor(a/b) on integers: -7/2 == -4.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// floorMod is a - floorDiv(a, b)*b: the result has the sign of b.
func floorMod(a, b int64) int64 {
	m := a % b
	if m != 0 && (m < 0) != (b < 0) {
		m += b
	}
	return m
}

// valueMod is the floor modulo on values, x - floor(x/y)*y, as in Python.
func valueMod(x, y float64) float64 { return x - math.Floor(x/y)*y }

func sigmoid(x float64) float64 { return 1 / (1 + math.Exp(-x)) }

func relu(x float64) float64 { return math.Max(x, 0) }

func rsqrt(x float64) float64 { return 1 / math.Sqrt(x) }

func absInt(a int64) int64 {
	if a < 0 {
		return -a
	}
	return a
}
