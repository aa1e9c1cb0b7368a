package ir

// FloorDiv is the index language's '/': the quotient rounded toward -inf
// (-7/2 == -4). b must not be 0.
func FloorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// FloorMod is the index language's '%', matching FloorDiv: the result has
// the sign of b (-7%2 == 1).
func FloorMod(a, b int64) int64 {
	m := a % b
	if m != 0 && (m < 0) != (b < 0) {
		m += b
	}
	return m
}
