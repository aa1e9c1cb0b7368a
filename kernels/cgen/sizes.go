package cgen

import (
	"fmt"
	"slices"
	"strings"

	"github.com/pkg/errors"

	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/loops"
)

// Kernels with symbolic extents (loops.Generalize) take the values of
// their size variables as the buffer after the tensors, an int64 array in
// loops.Func.Sizes order (a profiled kernel's timing buffer follows it).
// Each value becomes a local, nf_size_<name>, that loops run to and
// strides multiply by; the renderer assumes of a size only that it lies in
// [1, bounds.MaxSize].

// sizesBuffer names the array of size values in a kernel.
const sizesBuffer = "nf_sizes"

// sizeName is the C name of a size variable (named with loops.SizePrefix).
func sizeName(name string) string {
	return "nf_size_" + strings.TrimPrefix(name, loops.SizePrefix)
}

// sizesPrologue declares the kernel's size values, read from their buffer.
func (r *renderer) sizesPrologue(b *strings.Builder) {
	if len(r.sizes) == 0 {
		return
	}
	fmt.Fprintf(b, "\tconst int64_t *restrict %s = (const int64_t *)bufs[%d];\n", sizesBuffer, len(r.spec.Tensors))
	for i, s := range r.sizes {
		fmt.Fprintf(b, "\tconst int64_t %s = %s[%d];\n", sizeName(s), sizesBuffer, i)
	}
}

// extent is the C text of loop l's extent: its size or its constant.
func (r *renderer) extent(l *loops.Loop) string {
	switch {
	case l.Size != "" && l.By > 0 && l.Rem:
		return fmt.Sprintf("(%s %% %d)", sizeName(l.Size), l.By)
	case l.By > 0:
		return fmt.Sprintf("(%s / %d)", sizeName(l.Size), l.By)
	case l.Size != "":
		return sizeName(l.Size)
	}
	return fmt.Sprint(l.Extent)
}

// shapeText is t's shape as the kernel's comment prints it, a size by
// its name.
func shapeText(t *ir.TensorDecl) string {
	if t.Sizes == nil {
		return ir.ShapeString(t.Shape)
	}
	dims := make([]string, len(t.Shape))
	for d, n := range t.Shape {
		dims[d] = fmt.Sprint(n)
		if t.Sizes[d] != "" {
			dims[d] = strings.TrimPrefix(t.Sizes[d], loops.SizePrefix)
		}
	}
	return "[" + strings.Join(dims, ", ") + "]"
}

// nestWork is the C expression of nest n's work in a kernel with symbolic
// extents, the product of its statement's extents with each variable that
// runs to a size by that size; "" in a kernel of fixed shapes.
func (r *renderer) nestWork(n *loops.Nest) string {
	if !r.sized {
		return ""
	}
	sized := map[string]string{}
	if ax, ok := n.Schedule.LaneVar(n.Stmt); ok && n.Schedule.LaneSize != "" {
		sized[ax] = n.Schedule.LaneSize // split into loops that run to parts of it
	}
	var walk func(nodes []loops.Node)
	walk = func(nodes []loops.Node) {
		for _, x := range nodes {
			switch x := x.(type) {
			case *loops.Loop:
				if x.Size != "" && x.By == 0 {
					sized[x.Var] = x.Size
				}
				walk(x.Body)
			case *loops.Block:
				walk(x.Body)
			case *loops.If:
				walk(x.Body)
			}
		}
	}
	walk(n.Body)
	fixed, factors := int64(1), []string(nil)
	for _, v := range n.Stmt.Vars() {
		if s, ok := sized[v.Name]; ok {
			factors = append(factors, sizeName(s))
		} else {
			fixed *= v.Extent
		}
	}
	return innerText(fixed, factors)
}

// parallelIf is the if clause of a parallel loop in a kernel with symbolic
// extents: it runs in parallel only when its nest's work at the sizes of
// the launch reaches loops.MinParallelWork, as the default schedule decides
// for fixed shapes.
func (r *renderer) parallelIf() string {
	if r.work == "" {
		return ""
	}
	return fmt.Sprintf(" if(%s >= %d)", r.work, loops.MinParallelWork)
}

// innerText is the C text of an iteration count that is a constant times
// sizes (their C names): the constant alone without sizes, else the
// product, parenthesized when it has several factors.
func innerText(fixed int64, sizes []string) string {
	if len(sizes) == 0 {
		return fmt.Sprint(fixed)
	}
	parts := slices.Clone(sizes)
	if fixed != 1 {
		parts = append(parts, fmt.Sprint(fixed))
	}
	if len(parts) == 1 {
		return parts[0]
	}
	return "(" + strings.Join(parts, " * ") + ")"
}

// iterText is the C text of the iteration count of the collapsed loops
// ls: n, or in a kernel with symbolic extents the product with each
// loop that runs to a size by that size.
func (r *renderer) iterText(ls []*loops.Loop, n int64) string {
	if !r.sized {
		return fmt.Sprint(n)
	}
	fixed, sized := int64(1), []string(nil)
	for _, lp := range ls {
		if lp.Size != "" {
			sized = append(sized, sizeName(lp.Size))
		} else {
			fixed *= lp.Extent
		}
	}
	return innerText(fixed, sized)
}

// fixedLoops refuses loops that run to a size where only fixed extents
// are rendered: a GPU tiling's block and thread loops.
func fixedLoops(ls []*loops.Loop) error {
	for _, lp := range ls {
		if lp.Size != "" {
			return errors.Errorf("cgen: block or thread loop %s runs to size %s: only grid-stride loops run to a size", lp.Var, lp.Size)
		}
	}
	return nil
}

// sizedLoops reports whether one of ls runs to a size.
func sizedLoops(ls []*loops.Loop) bool {
	return slices.ContainsFunc(ls, func(lp *loops.Loop) bool { return lp.Size != "" })
}
