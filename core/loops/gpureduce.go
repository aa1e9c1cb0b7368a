package loops

import (
	"fmt"

	"github.com/pkg/errors"

	"github.com/neoflow/neoflow/core/ir"
)

// GPUReduction lowers a reduction statement with few points and long
// reductions for a GPU (Schedule.GPUReduce): a block per point, the
// point's reduction iterations (all reduction axes, collapsed, the last
// varying fastest) spread over the block's Threads threads, each folding
// every Threads-th iteration into a register, and the registers combined
// across the block by warp shuffles and shared memory (BlockCombine):
//
//	blocks for a...                 (the spatial axes, collapsed)
//	  shared %part[Threads/32]
//	  threads for red.t < Threads
//	    local %acc
//	    %acc = identity
//	    for red.c < ceil(N/Threads)
//	      if q < N                  (q = red.c*Threads + red.t)
//	        %acc op= rhs            (the reduction variables from q)
//	    combine %acc into Y[a...]
//
// A statement without spatial axes has one block loop of one iteration,
// over ".blk". The order in which the terms are combined differs from the
// interpreter's, so float sums and products differ by rounding.
type GPUReduction struct {
	// Threads is the block size: a multiple of 32 up to 1024.
	Threads int64
}

// String is the reduction as Dump prints it.
func (g *GPUReduction) String() string { return fmt.Sprintf("gpu reduce, threads %d", g.Threads) }

// BlockCombine combines Value, a scalar Local of every thread of the
// enclosing BindThread loop, by Op (in an unspecified order) and stores
// the result in Dst (one store, by one thread). Scratch names a shared
// Local of at least one element per warp. It is a barrier: every thread
// of the block reaches it, and Scratch may be reused after it. Then runs
// in the thread that stores, right after its store (a reduction's
// epilogue statements, epilogue.go): stores without barriers.
type BlockCombine struct {
	Op      ir.ReduceOp
	Value   *ir.Access
	Scratch string
	Dst     *ir.Access
	Then    []Node
}

func (*BlockCombine) node() {}

// Names of the GPU reduction's variables and locals; '.' starts no source
// name, so they collide with none.
const (
	reduceBlockVar  = ".blk"
	reduceThreadVar = "red.t"
	reduceChunkVar  = "red.c"
	partName        = LocalPrefix + "part"
)

func lowerGPUReduce(nest *Nest, g *GPUReduction) error {
	st := nest.Stmt
	if st.Stmt.Reduce == ir.Assign || len(st.Reduction) == 0 {
		return errors.New("a GPU reduction needs a reduction statement")
	}
	if g.Threads < 32 || g.Threads > MaxGPUThreads || g.Threads%32 != 0 {
		return errors.Errorf("GPU reduction over %d threads: want a multiple of 32 up to %d", g.Threads, MaxGPUThreads)
	}
	env := map[string]ir.Expr{}
	var blocks []ir.Var
	for _, v := range st.Spatial {
		if v.Extent == 1 {
			env[v.Name] = Lit(0)
			continue
		}
		env[v.Name] = Var(v.Name)
		blocks = append(blocks, v)
	}
	if blocks == nil {
		blocks = []ir.Var{{Name: reduceBlockVar, Extent: 1}}
	}
	body := loopChain(&nest.Body, blocks, BindBlock)
	*body = append(*body, &Local{Name: partName, Len: g.Threads / 32, Shared: true})
	th := loopChain(body, []ir.Var{{Name: reduceThreadVar, Extent: g.Threads}}, BindThread)

	n := int64(1)
	for _, v := range st.Reduction {
		n *= v.Extent
	}
	acc := &ir.Access{Tensor: accName}
	*th = append(*th,
		&Local{Name: accName, Len: 1},
		&Store{Dst: acc, Op: ir.Assign, Value: &ir.FloatLit{Value: Identity(st.Stmt.Reduce)}})
	q := Var(reduceThreadVar)
	cur := th
	if rounds := (n + g.Threads - 1) / g.Threads; rounds > 1 {
		lp := &Loop{Var: reduceChunkVar, Extent: rounds}
		*cur = append(*cur, lp)
		cur = &lp.Body
		q = Add(Mul(Var(reduceChunkVar), Lit(g.Threads)), q)
	}
	ext := make([]int64, len(st.Reduction))
	for i, v := range st.Reduction {
		ext[i] = v.Extent
	}
	for i, x := range unflatten(q, ext, n%g.Threads == 0) {
		env[st.Reduction[i].Name] = x
	}
	var fold Node = &Store{Dst: acc, Op: st.Stmt.Reduce, Value: Subst(st.Stmt.RHS, env)}
	if n%g.Threads != 0 {
		fold = &If{Cond: &ir.Binary{Op: ir.Lt, X: q, Y: Lit(n)}, Body: []Node{fold}}
	}
	*cur = append(*cur, fold)
	out := outAccess(st, env)
	*th = append(*th, &BlockCombine{Op: st.Stmt.Reduce, Value: acc, Scratch: partName, Dst: out})
	return nil
}
