package bounds

import "github.com/neoflow/neoflow/core/ir"

// Decide returns +1 when the index comparison c holds at every point of
// s, -1 when it holds at none, and 0 otherwise or when c is not a
// comparison of two index expressions. The difference of the sides is
// bounded by Range, so identical terms cancel (x - r + r >= 0 is x >= 0).
func (s *Scope) Decide(c ir.Expr) int {
	b, ok := c.(*ir.Binary)
	if !ok || !b.Op.IsCompare() || s.info.Kind(b.X) != ir.KindIndex || s.info.Kind(b.Y) != ir.KindIndex {
		return 0
	}
	d := s.Range(&ir.Binary{Op: ir.Sub, X: b.X, Y: b.Y})
	if d.Lo > d.Hi {
		return 0 // no value: decide nothing
	}
	switch b.Op {
	case ir.Lt:
		return verdict(d.Hi < 0, d.Lo >= 0)
	case ir.Le:
		return verdict(d.Hi <= 0, d.Lo > 0)
	case ir.Gt:
		return verdict(d.Lo > 0, d.Hi <= 0)
	case ir.Ge:
		return verdict(d.Lo >= 0, d.Hi < 0)
	case ir.Eq:
		return verdict(d.Lo == 0 && d.Hi == 0, d.Lo > 0 || d.Hi < 0)
	case ir.Ne:
		return verdict(d.Lo > 0 || d.Hi < 0, d.Lo == 0 && d.Hi == 0)
	}
	return 0
}

// verdict is +1 when always, -1 when never, else 0 (never wins).
func verdict(always, never bool) int {
	switch {
	case never:
		return -1
	case always:
		return 1
	}
	return 0
}
