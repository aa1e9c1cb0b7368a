package loops

import (
	"fmt"
	"slices"

	"github.com/pkg/errors"

	"github.com/neoflow/neoflow/core/ir"
)

// MMATiling lowers a 16-bit contraction onto the GPU's Tensor Cores
// (Schedule.MMA): a statement
//
//	Y[...] += A[...] * B[...]
//
// in float16 or bfloat16 whose reads index by plain variables. Its
// spatial axes read by A alone form M, those read by B alone form N,
// those read by both or neither are batch axes, and the reduction axes
// (each read by both) form K; each group is flattened, its last axis
// varying fastest. A block of 8 warps (2 x 4) or 4 (2 x 2) computes a
// BM x BN tile of a batch entry's M x N result, stepping through K 32 at
// a time: the block copies the A and B tiles into shared memory (16-byte
// vector loads along whichever axis of an operand is contiguous, zeros
// past the edges; the next step's loads are issued before this step's
// multiplications, into registers, and stored into the other of two
// shared buffers after them), and each warp multiplies its part of the
// tile with mma.sync m16n8k16 instructions, accumulating in float32
// registers; the result is rounded once when stored. A statement joined
// to a fused group (a weight's and an input's gradient) runs as its own
// kernel, as a group's members may. Only a CUDA backend renders it (an
// MMA node); before sm_80 the multiplication runs as warp shuffles and
// float arithmetic, correct but slow.
type MMATiling struct {
	// BM and BN are the block's tile of M and N: 32, 64 or 128 each.
	BM, BN int64
	// Warps is the block's warps: 8 (2 x 4, each (BM/2) x (BN/4)) or 4
	// (2 x 2, each (BM/2) x (BN/2): more reuse of each fragment, twice
	// the accumulators); 0 means 8.
	Warps int64
}

// WarpCount is the block's warps, 8 where Warps is 0.
func (t *MMATiling) WarpCount() int64 {
	if t.Warps == 0 {
		return 8
	}
	return t.Warps
}

// MMATiles are the tile sizes an MMATiling may take.
var MMATiles = []int64{32, 64, 128}

// String is the tiling as Dump prints it.
func (t *MMATiling) String() string {
	if t.Warps != 0 {
		return fmt.Sprintf("mma %dx%d, %d warps", t.BM, t.BN, t.Warps)
	}
	return fmt.Sprintf("mma %dx%d", t.BM, t.BN)
}

// MMAAxis is one axis of an MMA contraction with its element strides in
// the operands and the output (0 where one does not index by it).
type MMAAxis struct {
	Name       string
	Extent     int64
	SA, SB, SC int64
}

// MMA is the body of a nest lowered by an MMATiling: the contraction
// C = A x B over the flattened axis groups. Only a CUDA backend renders
// it.
type MMA struct {
	Tiling  MMATiling
	A, B, C string
	// Batch, M, N and K are the axis groups, each outermost first.
	Batch, M, N, K []MMAAxis
}

func (*MMA) node() {}

// GroupExtent is the flattened extent of an axis group.
func GroupExtent(axes []MMAAxis) int64 {
	n := int64(1)
	for _, a := range axes {
		n *= a.Extent
	}
	return n
}

// MatchMMA returns the contraction of statement st of spec as an MMA node
// (its Tiling unset), or why st is not one.
func MatchMMA(spec *ir.Spec, st *ir.BoundStmt) (*MMA, error) {
	if spec.DType != ir.Float16 && spec.DType != ir.BFloat16 {
		return nil, errors.Errorf("Tensor Cores take float16 and bfloat16, not %s", spec.DType)
	}
	s := st.Stmt
	if s.Reduce != ir.Sum || len(st.Reduction) == 0 {
		return nil, errors.New("not a sum over reduction axes")
	}
	if st.Offset != nil {
		return nil, errors.New("a part of its tensor")
	}
	mul, ok := s.RHS.(*ir.Binary)
	if !ok || mul.Op != ir.Mul {
		return nil, errors.New("the right-hand side is not a product of two reads")
	}
	var ops [2]map[string]int64
	var names [2]string
	for i, x := range []ir.Expr{mul.X, mul.Y} {
		a, ok := x.(*ir.Access)
		if !ok || a.Tensor == s.Tensor {
			return nil, errors.New("the right-hand side is not a product of two reads of other tensors")
		}
		if ops[i], ok = plainStrides(spec, a); !ok {
			return nil, errors.Errorf("a read of %s has an index that is not a plain variable", a.Tensor)
		}
		names[i] = a.Tensor
	}
	lhs := make([]string, len(s.Indices))
	for d, x := range s.Indices {
		lhs[d] = x.Name
	}
	out := rowMajorStrides(lhs, spec.Tensor(s.Tensor).Shape)
	m := &MMA{A: names[0], B: names[1], C: s.Tensor}
	for _, v := range st.Spatial {
		ax := MMAAxis{Name: v.Name, Extent: v.Extent, SA: ops[0][v.Name], SB: ops[1][v.Name], SC: out[v.Name]}
		switch {
		case ax.SA != 0 && ax.SB == 0:
			m.M = append(m.M, ax)
		case ax.SA == 0 && ax.SB != 0:
			m.N = append(m.N, ax)
		default:
			m.Batch = append(m.Batch, ax)
		}
	}
	for _, v := range st.Reduction {
		ax := MMAAxis{Name: v.Name, Extent: v.Extent, SA: ops[0][v.Name], SB: ops[1][v.Name]}
		if ax.SA == 0 || ax.SB == 0 {
			return nil, errors.Errorf("reduction axis %s is not read by both operands", v.Name)
		}
		m.K = append(m.K, ax)
	}
	if len(m.M) == 0 || len(m.N) == 0 {
		return nil, errors.New("one operand has no axis of its own (a matrix-vector product)")
	}
	// N holds the output's innermost axis where an operand owns it, so
	// that a warp's stores are close together.
	last := s.Indices[len(s.Indices)-1].Name
	if slices.ContainsFunc(m.M, func(a MMAAxis) bool { return a.Name == last }) {
		m.A, m.B, m.M, m.N = m.B, m.A, m.N, m.M
		for _, g := range [][]MMAAxis{m.Batch, m.M, m.N, m.K} {
			for i := range g {
				g[i].SA, g[i].SB = g[i].SB, g[i].SA
			}
		}
	}
	// Within a group, the operand's contiguous axis last: vector copies.
	byStride := func(g []MMAAxis, key func(MMAAxis) int64) {
		slices.SortStableFunc(g, func(x, y MMAAxis) int { return int(key(y) - key(x)) })
	}
	byStride(m.M, func(a MMAAxis) int64 { return a.SA })
	byStride(m.N, func(a MMAAxis) int64 { return a.SB })
	byStride(m.K, func(a MMAAxis) int64 { return min(a.SA, a.SB) })
	return m, nil
}

// plainStrides maps each variable of read a to its element stride in a's
// tensor (summed where it indexes several dimensions); false when an
// index is not a plain variable.
func plainStrides(spec *ir.Spec, a *ir.Access) (map[string]int64, bool) {
	vars := make([]string, len(a.Indices))
	for d, x := range a.Indices {
		v, ok := x.(*ir.Index)
		if !ok {
			return nil, false
		}
		vars[d] = v.Name
	}
	return rowMajorStrides(vars, spec.Tensor(a.Tensor).Shape), true
}

// rowMajorStrides maps the variable indexing each dimension of a
// row-major tensor of shape to its element stride, summed over the
// dimensions a variable indexes.
func rowMajorStrides(vars []string, shape []int64) map[string]int64 {
	out := map[string]int64{}
	stride := int64(1)
	for d := len(vars) - 1; d >= 0; d-- {
		out[vars[d]] += stride
		stride *= shape[d]
	}
	return out
}

// TileCounts is how many tiles of t cover m: along M, along N, and in
// all (times the batch entries).
func (m *MMA) TileCounts(t MMATiling) (mb, nb, tiles int64) {
	mb = (GroupExtent(m.M) + t.BM - 1) / t.BM
	nb = (GroupExtent(m.N) + t.BN - 1) / t.BN
	return mb, nb, GroupExtent(m.Batch) * mb * nb
}

// DefaultMMATiling is the tiling GPUSchedule gives contraction m: 128 x
// 128 where M and N are that large, smaller tiles for smaller extents, and
// while the tiles number fewer than gpuFewBlocks, the larger tile halved
// (down to 32) so that more of the GPU works. A 128 x 128 tile has 4
// warps: on an H200 the float16 and bfloat16 GEMM 4096^3 took 0.86-0.88
// ms so, 1.12-1.15x faster than with 8 (bench/results,
// gemm-2026-11-26-nvidia-h200-*.md).
func DefaultMMATiling(m *MMA) MMATiling {
	fit := func(e int64) int64 {
		t := MMATiles[len(MMATiles)-1]
		for t > MMATiles[0] && t/2 >= e {
			t /= 2
		}
		return t
	}
	t := MMATiling{BM: fit(GroupExtent(m.M)), BN: fit(GroupExtent(m.N))}
	tiles := func() int64 { _, _, n := m.TileCounts(t); return n }
	for tiles() < gpuFewBlocks && max(t.BM, t.BN) > MMATiles[0] {
		if t.BM >= t.BN {
			t.BM /= 2
		} else {
			t.BN /= 2
		}
	}
	if t.BM == 128 && t.BN == 128 {
		t.Warps = 4
	}
	return t
}

// Check reports why t cannot lower statement st of spec.
func (t *MMATiling) Check(spec *ir.Spec, st *ir.BoundStmt) error {
	_, err := t.lower(spec, st)
	return err
}

// lower is st's MMA node under t, or why t cannot lower st.
func (t *MMATiling) lower(spec *ir.Spec, st *ir.BoundStmt) (*MMA, error) {
	if !slices.Contains(MMATiles, t.BM) || !slices.Contains(MMATiles, t.BN) {
		return nil, errors.Errorf("MMA tile %dx%d: each side must be one of %v", t.BM, t.BN, MMATiles)
	}
	if t.Warps != 0 && t.Warps != 4 && t.Warps != 8 {
		return nil, errors.Errorf("MMA tile with %d warps: want 4 or 8", t.Warps)
	}
	m, err := MatchMMA(spec, st)
	if err != nil {
		return nil, err
	}
	m.Tiling = *t
	return m, nil
}

// lowerMMA lowers nest's statement by t: one MMA node.
func lowerMMA(spec *ir.Spec, nest *Nest, t *MMATiling) error {
	m, err := t.lower(spec, nest.Stmt)
	if err != nil {
		return err
	}
	nest.Body = []Node{m}
	return nil
}
