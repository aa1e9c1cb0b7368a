package autotune

import (
	"context"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/neoflow/neoflow/core/interp"
	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/loops"
	"github.com/neoflow/neoflow/internal/cudaemu"
	"github.com/neoflow/neoflow/internal/hostbuf"
	"github.com/neoflow/neoflow/internal/testops"
	"github.com/neoflow/neoflow/kernels"
	"github.com/neoflow/neoflow/kernels/cgen"
)

// TestGPUSpace decodes the seeds and random genomes of the GPU space of
// every test op and its gradient: each must lower and render, survive the
// database form, and (every seed of every other op, and the first seed
// and the first random genome of each op) compute what the reference
// interpreter does, run on the host by the CUDA emulator.
func TestGPUSpace(t *testing.T) {
	var tiled, reduced atomic.Int64
	t.Run("ops", func(t *testing.T) {
		for oi, o := range testops.All {
			t.Run(o.Name, func(t *testing.T) {
				t.Parallel()
				spec, err := o.Spec(ir.Float32)
				if err != nil {
					t.Fatal(err)
				}
				specs := []*ir.Spec{spec}
				if len(spec.InputsDecl()) > 0 {
					g, _, err := o.GradSpec(ir.Float32)
					if err != nil {
						t.Fatal(err)
					}
					specs = append(specs, g)
				}
				for si, spec := range specs {
					sp := NewGPUSpace(spec)
					rng := rand.New(rand.NewPCG(uint64(oi), uint64(si)))
					genomes := sp.Seeds()
					seeds := len(genomes)
					for range 6 {
						genomes = append(genomes, randomGenome(rng, sp.Cardinalities()))
					}
					for gi, g := range genomes {
						scheds := sp.Decode(g)
						back, err := FromProto(ToProto(scheds))
						if err != nil || !reflect.DeepEqual(back, scheds) {
							t.Fatalf("schedules %v came back from the database form as %v (%v)", scheds, back, err)
						}
						mod, err := kernels.CUDASource(spec, scheds, "nf_space")
						if err != nil {
							t.Fatalf("genome %v: %v", g, err)
						}
						for _, s := range scheds {
							if s.GPU != nil {
								tiled.Add(1)
							}
							if s.GPUReduce != nil {
								reduced.Add(1)
							}
						}
						if gi == 0 || gi == seeds || (oi%2 == 0 && gi < seeds) {
							emulate(t, spec, scheds, mod, uint64(oi))
						}
					}
				}
			})
		}
	})
	if tiled.Load() == 0 || reduced.Load() == 0 {
		t.Fatalf("%d GPU tilings and %d block reductions decoded: both must be tested", tiled.Load(), reduced.Load())
	}
}

func emulate(t *testing.T, spec *ir.Spec, scheds []loops.Schedule, mod *cgen.CUDAModule, seed uint64) {
	t.Helper()
	k, err := cudaemu.Compile(context.Background(), spec, mod, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	inputs := hostbuf.RandomInputs(spec, true, seed)
	want, err := interp.Run(spec, inputs)
	if err != nil {
		t.Fatal(err)
	}
	bufs := hostbuf.New(spec, inputs)
	defer bufs.Free()
	if err := k.Run(bufs.Ptr); err != nil {
		t.Fatal(err)
	}
	for i, td := range spec.Tensors {
		if td.Role == ir.RoleInput {
			continue
		}
		got := bufs.Get(i)
		for j := range want[i] {
			w, g := want[i][j], got[j]
			if math.IsNaN(w) && math.IsNaN(g) || math.Abs(g-w) <= 2e-4*(1+math.Abs(w)) {
				continue
			}
			t.Fatalf("%s with %v: %s[%d] = %v, interpreter says %v", spec.Op.Name, scheds, td.Name, j, g, w)
		}
	}
}

// TestGPUGroupBlocks checks the block-size gene of the grid-stride
// kernels in the GPU space of the fused test ops: a fused group of '='
// statements keeps its one kernel under every block size, launched with
// that many threads, and computes what the interpreter does on the CUDA
// emulator.
func TestGPUGroupBlocks(t *testing.T) {
	groups := 0
	for name, spec := range fusedSpecs(t, ir.Float32) {
		sp := NewGPUSpace(spec)
		for _, g := range sp.Seeds()[1:] {
			scheds := sp.Decode(g)
			block := 0
			for _, ss := range sp.stmts {
				if ss.block && g[ss.off] != 0 {
					block = gpuBlockThreads[g[ss.off]]
				}
			}
			if block == 0 {
				continue
			}
			mod, err := kernels.CUDASource(spec, scheds, "nf_block")
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			for i, s := range scheds {
				if s.Group == nil || spec.Stmts[i].Joined {
					continue
				}
				groups++
				if s.Threads != block {
					t.Fatalf("%s statement %d: %v, want its group in blocks of %d", name, i, s, block)
				}
				launched := slices.ContainsFunc(mod.Launches, func(l cgen.Launch) bool {
					return l.Nest == i && l.Threads == block
				})
				if !launched {
					t.Fatalf("%s: the group of statement %d is not launched in blocks of %d: %+v", name, i, block, mod.Launches)
				}
			}
			emulate(t, spec, scheds, mod, 5)
		}
	}
	if groups == 0 {
		t.Fatal("no fused group of the test ops has a block-size gene")
	}
}

// TestGPUSpaceTensorCores: a 16-bit contraction's space has the Tensor
// Core mode, its seeds try three tiles (and the default's), every genome of that mode decodes
// to an MMA schedule that survives the database form and computes what
// the interpreter does on the emulator.
func TestGPUSpaceTensorCores(t *testing.T) {
	o := testops.Op{Name: "gemm", Src: "C[i,j] += A[i,k] * B[k,j]", Shapes: [][]int64{{40, 48}, {48, 72}}}
	spec, err := o.Spec(ir.BFloat16)
	if err != nil {
		t.Fatal(err)
	}
	sp := NewGPUSpace(spec)
	if !sp.stmts[0].mma || sp.card[gpuGeneMode] != gpuModeMMA+1 {
		t.Fatalf("space %+v has no Tensor Core mode", sp.stmts[0])
	}
	tiles := map[loops.MMATiling]bool{}
	for _, g := range sp.Seeds() {
		if s := sp.Decode(g)[0]; s.MMA != nil {
			tiles[*s.MMA] = true
		}
	}
	if len(tiles) < 3 {
		t.Fatalf("the seeds try the tiles %v, want three besides the default", tiles)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range 4 {
		g := randomGenome(rng, sp.Cardinalities())
		g[gpuGeneMode] = gpuModeMMA
		scheds := sp.Decode(g)
		if scheds[0].MMA == nil {
			t.Fatalf("genome %v decoded to %v", g, scheds)
		}
		back, err := FromProto(ToProto(scheds))
		if err != nil || !reflect.DeepEqual(back, scheds) {
			t.Fatalf("schedules %v came back from the database form as %v (%v)", scheds, back, err)
		}
		mod, err := kernels.CUDASource(spec, scheds, "nf_space")
		if err != nil {
			t.Fatal(err)
		}
		if i < 2 {
			k, err := cudaemu.Compile(context.Background(), spec, mod, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			inputs := hostbuf.RandomInputs(spec, false, uint64(i))
			want, err := interp.Run(spec, inputs)
			if err != nil {
				t.Fatal(err)
			}
			bufs := hostbuf.New(spec, inputs)
			if err := k.Run(bufs.Ptr); err != nil {
				t.Fatal(err)
			}
			got := bufs.Get(2)
			for j := range want[2] {
				if math.Abs(got[j]-want[2][j]) > 1e-2*(1+math.Abs(want[2][j])) {
					t.Fatalf("%v: C[%d] = %v, interpreter says %v", scheds, j, got[j], want[2][j])
				}
			}
			bufs.Free()
		}
	}
}
