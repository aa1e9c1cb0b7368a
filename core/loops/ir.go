package loops

import (
	"github.com/neoflow/neoflow/core/bounds"
	"github.com/neoflow/neoflow/core/ir"
)

// Func is a lowered kernel: one loop nest per statement of Spec, or per
// fused group of statements lowered together (Schedule.Group), run in
// order. The kernel's buffers are Spec.Tensors, in that order.
type Func struct {
	Spec  *ir.Spec
	Nests []*Nest
	// Sizes lists the size variables of a kernel with symbolic extents
	// (Generalize), each named with SizePrefix: the kernel takes their
	// values as one more buffer after Spec.Tensors, an int64 array in this
	// order. Nil for a kernel of fixed shapes.
	Sizes []string
	// Guards, in a kernel with symbolic extents, are conditions on the
	// sizes' values (named as in Sizes) under which every access is in
	// bounds: a launch at values that break one is refused.
	Guards []bounds.Guard
}

// Nest computes one statement, or a fused group of statements.
type Nest struct {
	// Index is the statement's position in Spec.Stmts (a group's first
	// member's).
	Index int
	Stmt  *ir.BoundStmt
	// Members lists the positions of a fused group's statements
	// (Schedule.Group, or a reduction and the epilogue statements its
	// nest stores, epilogue.go), Index first; nil for a nest of one
	// statement.
	Members []int
	// Schedule is the schedule the nest was lowered with.
	Schedule Schedule
	Body     []Node
	// SizeValues holds the value in this specialization of each size
	// variable that the body names (Schedule.LaneSize), for the passes
	// that check the nest at its extents; nil in a generalized kernel.
	SizeValues map[string]int64
}

// Node is a *Loop, *Block, *Local, *Store, *If, *Sync or *BlockCombine.
type Node interface{ node() }

// Loop runs Body for Var = 0, 1, ..., Extent-1.
type Loop struct {
	Var    string
	Extent int64
	// Size, in a kernel with symbolic extents (Generalize), names the size
	// variable the loop runs to; Extent is then that size's value in one
	// specialization, and the loop is never split, tiled or unrolled.
	Size string
	// By, with Size, makes the loop run to Size / By (rounded down), or,
	// with Rem, to Size % By: the outer loop and the serial remainder of a
	// lane axis that runs to a size (Schedule.LaneSize). Extent is then
	// that count in one specialization.
	By  int64
	Rem bool
	// Parallel distributes the iterations over threads. Collapse (>= 1)
	// is the number of perfectly nested loops, this one first, whose
	// combined iteration space is distributed; the inner ones carry no
	// annotation of their own.
	Parallel bool
	Collapse int
	// Vector marks a lane loop: its iterations are independent (no
	// loop-carried dependence), so it may be run as SIMD.
	Vector bool
	// Unroll is an unroll factor hint; 0 or 1 means none.
	Unroll int
	// Bind maps the loop onto the GPU's grid (see Binding); with Collapse
	// it covers the perfectly nested loops that Collapse counts.
	Bind Binding
	Body []Node
}

// Binding maps a loop onto the GPU's grid. Only the GPU tiled lowering
// (GPUTiling) binds loops, and only a CUDA backend renders them.
type Binding int

const (
	// BindNone is an ordinary loop.
	BindNone Binding = iota
	// BindBlock distributes the iterations over thread blocks; all the
	// threads of a block run each of its iterations together.
	BindBlock
	// BindThread runs every iteration at once, one thread each: its
	// (collapsed) iteration count is the block size. The iterations are
	// concurrent, not sequential: a Sync in the body is a barrier of all
	// of them, and a shared Local declared outside is seen by all.
	BindThread
)

// Sync is a barrier of the threads of a BindThread loop: every write to a
// shared Local before it is seen by every read after it. Every thread
// reaches it the same number of times.
type Sync struct{}

// Block is a scope, e.g. the remainder of a split axis.
type Block struct {
	Comment string
	Body    []Node
}

// Local declares a register array of Len elements of the op's dtype,
// visible in the rest of the enclosing body. Its contents start undefined.
// Name starts with LocalPrefix. Shared puts it in a GPU block's shared
// memory, one array for all the threads of the block, declared outside
// the BindThread loop that uses it.
type Local struct {
	Name   string
	Len    int64
	Shared bool
	// Copy marks a Pack's or Relayout's buffer: filled, then only read,
	// and never an accumulator. A C backend reads it through a restrict
	// pointer: GCC kept a register tile's accumulator in memory when the
	// tile's products read a local array beside it (float32 GEMM 1024³,
	// 8 rows of 4 vectors with B packed: 92 GFLOP/s against 207 through
	// the pointer).
	Copy bool
}

// Store writes Dst, an element of a tensor or of a Local. With Op ==
// ir.Assign it sets Dst = Value; otherwise it combines, Dst = Dst op Value
// (Sum adds, Prod multiplies, Max and Min keep the larger and smaller value
// by the exact rule of package ir: Dst = max(Dst, Value)).
//
// Atomic says that other iterations of an enclosing parallel loop may
// combine into the same element at the same time (a scatter under an
// atomic schedule): the backend must combine atomically.
//
// Vec > 1 makes an assignment copy Vec consecutive elements at once, as
// one vector (a GPU tiling's cooperative copy): 16 bytes of float32 or
// float64, or 8 bytes of float16/bfloat16 widened to 4 float32: Dst is an
// element of a shared Local and Value a tensor element, or
// where(c, element, 0) whose condition holds for all Vec elements or none.
// Both start at a multiple of Vec elements from a 16-byte aligned base.
type Store struct {
	Dst    *ir.Access
	Op     ir.ReduceOp
	Value  ir.Expr
	Atomic bool
	Vec    int
}

// Prefetch asks the CPU to bring the Bytes bytes that start at tensor
// element Addr into its caches ahead of a read. It never faults, whatever
// the address, but evaluates Addr's index expressions, whose own reads
// (an index tensor's elements) must be in bounds. The C backend renders it
// as __builtin_prefetch per cache line; CUDA renders nothing.
type Prefetch struct {
	Addr  *ir.Access
	Bytes int64
}

// If runs Body when Cond, a KindBool expression, holds. && and || in Cond
// short-circuit, so a conjunct may guard a read in a later one.
type If struct {
	Cond ir.Expr
	Body []Node
}

// LocalPrefix starts the name of every Local. In expressions (ir.Access,
// including Store.Dst) a name with this prefix is a Local, indexed by one
// lane index, or by none when the Local has one element. Source names never
// start with it.
const LocalPrefix = "%"

// IsLocal reports whether an access names a Local rather than a tensor.
func IsLocal(name string) bool { return len(name) > 0 && name[:1] == LocalPrefix }

func (*Loop) node()     {}
func (*Block) node()    {}
func (*Local) node()    {}
func (*Store) node()    {}
func (*If) node()       {}
func (*Prefetch) node() {}
func (*Sync) node()     {}
