package loops

import (
	"fmt"

	"github.com/pkg/errors"

	"github.com/neoflow/neoflow/core/ir"
)

// The loops of a tiling: each axis's levels (Tiling.Splits), their
// extents and strides, and the remainders a split leaves.

// TileLoop names level l of a split axis.
func TileLoop(axis string, level int) string { return fmt.Sprintf("%s.t%d", axis, level) }

// tileLoop is one loop of a tiling.
type tileLoop struct {
	name    string
	axis    string
	extent  int64
	stride  int64 // weight of the loop variable in the axis
	spatial bool
	// rem is the lane remainder (Tiling.Splits) of the outer loop of an
	// axis whose factors do not divide its extent, 0 otherwise.
	rem int64
	// size, for the outer and last loops of an axis split over a size
	// (Split.Size), names that size; by is the split's last factor. The
	// outer loop runs to size / by and has a remainder at every size,
	// where the last loop is cut to size % by.
	size string
	by   int64
}

// sizedOuter reports whether l is the outer loop of an axis split over a
// size (Split.Size).
func (l tileLoop) sizedOuter() bool { return l.size != "" && l.name == TileLoop(l.axis, 0) }

// TileLoops lists the tile loops of statement st under splits, axes in
// statement order (spatial, then reduction), levels outermost first.
func TileLoops(st *ir.BoundStmt, splits []Split) []string {
	ls, err := tileLoops(st, splits)
	if err != nil {
		return nil
	}
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = l.name
	}
	return out
}

// TileExtents maps each tile loop of statement st under splits to its
// extent; it is nil when the splits are invalid.
func TileExtents(st *ir.BoundStmt, splits []Split) map[string]int64 {
	ls, err := tileLoops(st, splits)
	if err != nil {
		return nil
	}
	out := make(map[string]int64, len(ls))
	for _, l := range ls {
		out[l.name] = l.extent
	}
	return out
}

func tileLoops(st *ir.BoundStmt, splits []Split) ([]tileLoop, error) {
	fs := map[string][]int64{}
	sized := map[string]string{}
	for _, s := range splits {
		if _, _, ok := axis(st, s.Axis); !ok {
			return nil, errors.Errorf("split of %s, not an axis of the statement", s.Axis)
		}
		if _, dup := fs[s.Axis]; dup {
			return nil, errors.Errorf("axis %s split twice", s.Axis)
		}
		fs[s.Axis] = s.Factors
		if s.Size != "" {
			sized[s.Axis] = s.Size
		}
	}
	var out []tileLoop
	add := func(ax ir.Var, spatial bool) error {
		f, ok := fs[ax.Name]
		if !ok || len(f) == 0 {
			out = append(out, tileLoop{name: ax.Name, axis: ax.Name, extent: ax.Extent, stride: 1, spatial: spatial})
			return nil
		}
		prod := int64(1)
		for _, x := range f {
			if x < 1 {
				return errors.Errorf("axis %s: tile factor %d < 1", ax.Name, x)
			}
			prod *= x
		}
		rem, size := ax.Extent%prod, sized[ax.Name]
		switch {
		case size != "" && prod != f[len(f)-1]:
			return errors.Errorf("axis %s runs to a size: its tile factors %v must be 1 but the last", ax.Name, f)
		case size == "" && (prod > ax.Extent || rem != 0 && prod != f[len(f)-1]):
			return errors.Errorf("axis %s: tile factors %v do not divide its extent %d", ax.Name, f, ax.Extent)
		}
		exts := append([]int64{ax.Extent / prod}, f...)
		stride := prod
		for l, e := range exts {
			tl := tileLoop{name: TileLoop(ax.Name, l), axis: ax.Name, extent: e, stride: stride, spatial: spatial}
			if l == 0 {
				tl.rem = rem
			}
			if size != "" && (l == 0 || l == len(f)) {
				tl.size, tl.by = size, prod
			}
			out = append(out, tl)
			if l < len(f) {
				stride /= f[l]
			}
		}
		return nil
	}
	for _, ax := range st.Spatial {
		if err := add(ax, true); err != nil {
			return nil, err
		}
	}
	for _, ax := range st.Reduction {
		if err := add(ax, false); err != nil {
			return nil, err
		}
	}
	return out, nil
}
