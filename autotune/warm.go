package autotune

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/neoflow/neoflow/api"
	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/loops"
)

// Family is the tuning-database family of spec: Key's kernel structure
// without the extents (the op's structural hash, every statement's axis
// names, whether it is a part of its tensor or joined to a group), its
// dtype, tensor ranks, target and version. Records of one family are one
// kernel at other shapes: their genomes have the same layout, so the
// nearest one warm starts a new shape (WarmStart).
func Family(spec *ir.Spec, version, target string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s %s %s", ir.Hash(spec.Op), spec.DType, target, version)
	writeStmts(&b, spec, false)
	for _, t := range spec.Tensors {
		fmt.Fprintf(&b, "\n%s:%d", t.Name, len(t.Shape))
	}
	sum := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(sum[:16])
}

// ShapeDistance is how far apart the tensor shapes of two keys of one
// family are: the sum over every dimension of |log(a/b)|; false when
// the keys do not list the same tensors and ranks.
func ShapeDistance(a, b *api.TuneKey) (float64, bool) {
	ta, tb := a.GetTensors(), b.GetTensors()
	if len(ta) != len(tb) {
		return 0, false
	}
	d := 0.0
	for i := range ta {
		sa, ok1 := keyShape(ta[i])
		sb, ok2 := keyShape(tb[i])
		if !ok1 || !ok2 || len(sa) != len(sb) {
			return 0, false
		}
		for j := range sa {
			d += math.Abs(math.Log(float64(sa[j]) / float64(sb[j])))
		}
	}
	return d, true
}

// keyShape parses the shape of a TuneKey tensor, "name:dtype[d0,d1]".
func keyShape(s string) ([]int64, bool) {
	lo, hi := strings.IndexByte(s, '['), strings.LastIndexByte(s, ']')
	if lo < 0 || hi < lo {
		return nil, false
	}
	if hi == lo+1 {
		return nil, true
	}
	var out []int64
	for _, p := range strings.Split(s[lo+1:hi], ",") {
		n, err := strconv.ParseInt(p, 10, 64)
		if err != nil || n < 1 {
			return nil, false
		}
		out = append(out, n)
	}
	return out, true
}

// WarmStart projects rec, the record of spec's kernel at other shapes (its
// Family), into spec's schedule space (the CUDA one when gpu): its genome
// with every split or step gene chosen again for the new extents, nearest
// to the factors the record's schedules used. It returns that genome and
// its schedules; false when the record has no genome or its layout does
// not fit.
func WarmStart(spec *ir.Spec, rec *api.TuneRecord, gpu bool) ([]int, []loops.Schedule, bool) {
	old := make([]int, len(rec.GetGenome()))
	for i, g := range rec.GetGenome() {
		old[i] = int(g)
	}
	scheds, err := FromProto(rec.GetSchedules())
	if err != nil || len(old) == 0 || len(scheds) != len(spec.Stmts) {
		return nil, nil, false
	}
	if gpu {
		sp := NewGPUSpace(spec)
		g, ok := sp.Project(old, scheds)
		if !ok {
			return nil, nil, false
		}
		return g, sp.Decode(g), true
	}
	sp := NewSpace(spec)
	g, ok := sp.Project(old, scheds)
	if !ok {
		return nil, nil, false
	}
	return g, sp.Decode(g), true
}

// Project maps old, a genome of this kernel's space at other shapes whose
// schedules are oldScheds, onto sp: every gene kept (within its
// cardinality), but a tiled statement's or group's split genes chosen
// among sp's factors for the new extents, nearest (closest) to the
// factors its old tiling split each axis into. False when the layouts
// differ.
func (sp *Space) Project(old []int, oldScheds []loops.Schedule) ([]int, bool) {
	g, ok := clampGenome(old, sp.card)
	if !ok || len(oldScheds) != len(sp.stmts) {
		return nil, false
	}
	for i, ss := range sp.stmts {
		if ss.scatter {
			continue
		}
		switch s := oldScheds[i]; {
		case g[ss.off+geneMode] == 1 && s.Tiling != nil:
			ss.projectSplits(g, s.Tiling.Splits)
		case g[ss.off+geneMode] == 2 && ss.grp != nil && s.Group != nil:
			ss.grp.dom.projectSplits(g, s.Group.Splits)
		}
	}
	return g, true
}

// projectSplits sets ss's split genes in g to the choices nearest splits,
// an axis not listed being unsplit.
func (ss *stmtSpace) projectSplits(g []int, splits []loops.Split) {
	for a := range ss.splits {
		ax := axisAt(ss.st, a)
		want := []int64{1, 1}
		for _, s := range splits {
			if s.Axis == ax.Name {
				want = append(slices.Clone(s.Factors), 1, 1)
			}
		}
		g[ss.off+numFixedGenes+a] = closest(ss.splits[a], want)
	}
}

// Project maps old, a genome of this kernel's CUDA space at other shapes
// whose schedules are oldScheds, onto sp: every gene kept (within its
// cardinality; a thread or register split beyond the new extents is
// repaired when decoded), but each step gene chosen among the new
// divisors, nearest to the old step. False when the layouts differ.
func (sp *GPUSpace) Project(old []int, oldScheds []loops.Schedule) ([]int, bool) {
	g, ok := clampGenome(old, sp.card)
	if !ok || len(oldScheds) != len(sp.stmts) {
		return nil, false
	}
	for i, ss := range sp.stmts {
		t := oldScheds[i].GPU
		if ss.fixed || t == nil {
			continue
		}
		n := len(ss.st.Spatial)
		for k, v := range ss.st.Reduction {
			want := []int64{v.Extent}
			for _, s := range t.Steps {
				if s.Axis == v.Name {
					want = []int64{s.Tile}
				}
			}
			choices := make([][]int64, len(ss.steps[k]))
			for j, d := range ss.steps[k] {
				choices[j] = []int64{d}
			}
			g[ss.off+gpuFixedGenes+2*n+k] = closest(choices, want)
		}
	}
	return g, true
}

// clampGenome is old with every gene within card; false when the lengths
// differ.
func clampGenome(old []int, card []int) ([]int, bool) {
	if len(old) != len(card) {
		return nil, false
	}
	g := make([]int, len(old))
	for i, x := range old {
		g[i] = min(max(x, 0), card[i]-1)
	}
	return g, true
}
