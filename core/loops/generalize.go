package loops

import (
	"fmt"
	"reflect"
	"slices"

	"github.com/pkg/errors"

	"github.com/neoflow/neoflow/core/ir"
)

// Size is a size variable of a kernel with symbolic extents: its name
// (without SizePrefix) and the values it had in the two lowerings that
// Generalize compares.
type Size struct {
	Name string
	A, B int64
}

// SizePrefix starts the name of a size variable wherever the loop IR
// names one: an ir.Index in a tensor's stride (FlatIndexOf), a Loop's
// Size and a TensorDecl's Sizes. Source names never start with it.
const SizePrefix = "$"

// IsSize reports whether an index variable's name is a size variable's.
func IsSize(name string) bool { return len(name) > 0 && name[:1] == SizePrefix }

// Generalize is the kernel of a and b for every value of the size
// variables: a and b are the same op lowered with the same schedules at
// two specializations that differ only in the sizes' values (A in a, B in
// b). It returns a's loop nests in which every loop whose extent is a
// size's value in both (A in a where b has B) runs to that size (Loop.Size),
// and a's tensors in which such a dimension is that size (Sizes); the
// kernel then takes the sizes' values, in sizes' order, as one more
// buffer, an int64 array (Func.Sizes).
//
// Everything else must be equal in a and b: a constant, a schedule
// decision or a dimension that follows from a size some other way (s - 1,
// a loop split at one size and not at the other) is refused with an error
// naming it, and the caller builds a kernel per shape instead. Each
// size's A and B must differ and be at least 2 (a loop of extent 1 is not
// lowered as a loop), and no two sizes may share both values. The bounds
// of the accesses must have been proven for every size (sema.ProveSymbolic).
func Generalize(a, b *Func, sizes []Size) (*Func, error) {
	byPair, err := CheckSizes(sizes)
	if err != nil {
		return nil, err
	}
	g := &generalizer{byPair: map[[2]int64]string{}, names: map[string]bool{}}
	for pair, name := range byPair {
		g.byPair[pair] = SizePrefix + name
		g.names[SizePrefix+name] = true
	}
	tensors, err := g.tensors(a.Spec.Tensors, b.Spec.Tensors)
	if err != nil {
		return nil, err
	}
	if len(a.Nests) != len(b.Nests) {
		return nil, errors.Errorf("generalize: %d loop nests at one size, %d at the other", len(a.Nests), len(b.Nests))
	}
	out := &Func{Spec: &ir.Spec{Op: a.Spec.Op, DType: a.Spec.DType, Tensors: tensors, Stmts: a.Spec.Stmts}}
	for _, s := range sizes {
		out.Sizes = append(out.Sizes, SizePrefix+s.Name)
	}
	for i, na := range a.Nests {
		nb := b.Nests[i]
		if na.Index != nb.Index || !slices.Equal(na.Members, nb.Members) || !reflect.DeepEqual(na.Schedule, nb.Schedule) {
			return nil, errors.Errorf("generalize: nest %d differs between the sizes (statement %d, schedule %s, and %d, %s)", i, na.Index, na.Schedule, nb.Index, nb.Schedule)
		}
		body, err := g.nodes(na.Body, nb.Body)
		if err != nil {
			return nil, errors.Wrapf(err, "generalize: statement %d (%s)", na.Index, na.Stmt.Stmt.Tensor)
		}
		n := *na
		n.Body, n.SizeValues = body, nil
		out.Nests = append(out.Nests, &n)
	}
	return out, nil
}

// CheckSizes checks the sizes Generalize takes: each with two different
// values of at least 2, no two with the same pair. It returns each size's
// name by its pair.
func CheckSizes(sizes []Size) (map[[2]int64]string, error) {
	byPair := map[[2]int64]string{}
	for _, s := range sizes {
		if s.A == s.B || s.A < 2 || s.B < 2 {
			return nil, errors.Errorf("generalize: size %s is %d and %d (two different values of at least 2 are needed)", s.Name, s.A, s.B)
		}
		pair := [2]int64{s.A, s.B}
		if other, dup := byPair[pair]; dup {
			return nil, errors.Errorf("generalize: sizes %s and %s are both %d and %d", other, s.Name, s.A, s.B)
		}
		byPair[pair] = s.Name
	}
	return byPair, nil
}

// generalizer holds the size variables by their pair of values, and
// their names.
type generalizer struct {
	byPair map[[2]int64]string
	names  map[string]bool
}

// extent is the size variable of a pair of extents, "" when they are
// equal; an error when they differ and are no size's pair.
func (g *generalizer) extent(ea, eb int64, what string) (string, error) {
	if ea == eb {
		return "", nil
	}
	if s, ok := g.byPair[[2]int64{ea, eb}]; ok {
		return s, nil
	}
	return "", errors.Errorf("%s is %d at one size and %d at the other, which follows from no size variable alone", what, ea, eb)
}

func (g *generalizer) tensors(ta, tb []*ir.TensorDecl) ([]*ir.TensorDecl, error) {
	if len(ta) != len(tb) {
		return nil, errors.Errorf("generalize: %d buffers at one size, %d at the other", len(ta), len(tb))
	}
	out := make([]*ir.TensorDecl, len(ta))
	for i, x := range ta {
		y := tb[i]
		if x.Name != y.Name || x.Role != y.Role || x.DType != y.DType || len(x.Shape) != len(y.Shape) {
			return nil, errors.Errorf("generalize: buffer %d is %s%s at one size and %s%s at the other", i, x.Name, ir.ShapeString(x.Shape), y.Name, ir.ShapeString(y.Shape))
		}
		if x.Limit != y.Limit {
			return nil, errors.Errorf("generalize: index tensor %s indexes a dimension of %d at one size and %d at the other", x.Name, x.Limit, y.Limit)
		}
		t := *x
		t.Sizes = nil
		for d := range x.Shape {
			s, err := g.extent(x.Shape[d], y.Shape[d], fmt.Sprintf("dimension %d of %s", d, x.Name))
			if err != nil {
				return nil, errors.Wrap(err, "generalize")
			}
			if s != "" && t.Sizes == nil {
				t.Sizes = make([]string, len(x.Shape))
			}
			if s != "" {
				t.Sizes[d] = s
			}
		}
		out[i] = &t
	}
	return out, nil
}

func (g *generalizer) nodes(as, bs []Node) ([]Node, error) {
	if len(as) != len(bs) {
		return nil, errors.Errorf("a body has %d nodes at one size and %d at the other", len(as), len(bs))
	}
	out := make([]Node, len(as))
	for i, x := range as {
		n, err := g.node(x, bs[i])
		if err != nil {
			return nil, err
		}
		out[i] = n
	}
	return out, nil
}

func (g *generalizer) node(x, y Node) (Node, error) {
	switch x := x.(type) {
	case *Loop:
		ly, ok := y.(*Loop)
		if !ok {
			return nil, errors.Errorf("loop %s is a %T at the other size", x.Var, y)
		}
		s, err := x.Size, error(nil)
		if s == "" {
			s, err = g.extent(x.Extent, ly.Extent, "the extent of loop "+x.Var)
		} else if !g.names[s] {
			// A loop the lowering sized (By) names its size itself.
			err = errors.Errorf("loop %s runs to %s, which is no size of the kernel", x.Var, s)
		}
		if err != nil {
			return nil, err
		}
		cx, cy := *x, *ly
		cx.Body, cy.Body, cy.Extent = nil, nil, x.Extent
		if !reflect.DeepEqual(cx, cy) {
			return nil, errors.Errorf("loop %s is scheduled differently at the two sizes", x.Var)
		}
		body, err := g.nodes(x.Body, ly.Body)
		if err != nil {
			return nil, err
		}
		cx.Body, cx.Size = body, s
		return &cx, nil
	case *Block:
		by, ok := y.(*Block)
		if !ok || x.Comment != by.Comment {
			return nil, errors.Errorf("block %q differs at the other size", x.Comment)
		}
		body, err := g.nodes(x.Body, by.Body)
		return &Block{Comment: x.Comment, Body: body}, err
	case *If:
		iy, ok := y.(*If)
		if !ok || !ir.Equal(x.Cond, iy.Cond) {
			return nil, errors.Errorf("guard %s differs at the other size", ir.ExprString(x.Cond))
		}
		body, err := g.nodes(x.Body, iy.Body)
		return &If{Cond: x.Cond, Body: body}, err
	}
	if !reflect.DeepEqual(x, y) {
		if sx, ok := x.(*Store); ok {
			if sy, ok := y.(*Store); ok {
				return nil, errors.Errorf("the store %s = %s is %s = %s at the other size", ir.ExprString(sx.Dst), ir.ExprString(sx.Value), ir.ExprString(sy.Dst), ir.ExprString(sy.Value))
			}
		}
		return nil, errors.Errorf("a %T differs at the two sizes", x)
	}
	return x, nil
}

// FlatIndexOf is the element offset of access a in row-major tensor t:
// FlatIndex for fixed shapes; with symbolic dimensions (t.Sizes) each
// stride is the product of the dimensions inside it, sizes as variables.
func FlatIndexOf(a *ir.Access, t *ir.TensorDecl) ir.Expr {
	if t.Sizes == nil {
		return FlatIndex(a, t.Shape)
	}
	off := Lit(0)
	stride, fixed := ir.Expr(nil), int64(1)
	for d := len(t.Shape) - 1; d >= 0; d-- {
		if d < len(a.Indices) {
			s := Lit(fixed)
			if stride != nil {
				s = Mul(stride, s)
			}
			off = Add(Mul(a.Indices[d], s), off)
		}
		if t.Sizes[d] == "" {
			fixed *= max(t.Shape[d], 1)
		} else if stride == nil {
			stride = Var(t.Sizes[d])
		} else {
			stride = Mul(stride, Var(t.Sizes[d]))
		}
	}
	return off
}
