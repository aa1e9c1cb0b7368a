package interp

import "math"

// valueMod is the floor modulo on values, x - floor(x/y)*y, as in Python.
func valueMod(x, y float64) float64 { return x - math.Floor(x/y)*y }

func sigmoid(x float64) float64 { return 1 / (1 + math.Exp(-x)) }

// maxValue and minValue are max and min on values, as core/ir defines
// them: a NaN operand propagates, and of two equal operands (+0 and -0
// included) the second is returned.
func maxValue(a, b float64) float64 {
	if a > b || a != a {
		return a
	}
	return b
}

func minValue(a, b float64) float64 {
	if a < b || a != a {
		return a
	}
	return b
}

// relu is max(x, 0): NaN stays NaN and -0 gives +0.
func relu(x float64) float64 { return maxValue(x, 0) }

func rsqrt(x float64) float64 { return 1 / math.Sqrt(x) }

func absInt(a int64) int64 {
	if a < 0 {
		return -a
	}
	return a
}

// softplus is torch.nn.functional.softplus's: x above 20, else log1p(exp(x)).
func softplus(x float64) float64 {
	if x > 20 {
		return x
	}
	return math.Log1p(math.Exp(x))
}

// sign is torch.sign's: -1, 0 or 1, and 0 for NaN.
func sign(x float64) float64 {
	switch {
	case x > 0:
		return 1
	case x < 0:
		return -1
	}
	return 0
}
