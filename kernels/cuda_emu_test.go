package kernels

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/neoflow/neoflow/core/fuse"
	"github.com/neoflow/neoflow/core/interp"
	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/loops"
	"github.com/neoflow/neoflow/core/pipeline"
	"github.com/neoflow/neoflow/internal/cudaemu"
	"github.com/neoflow/neoflow/internal/hostbuf"
	"github.com/neoflow/neoflow/internal/testops"
)

// TestCUDAEmulated renders every test op and its gradient (and, in
// float32, its tangent op) as CUDA with the
// GPU default schedules, runs the module on the host (internal/cudaemu)
// and compares it with the reference interpreter, in every dtype (the
// 16-bit ones computed in float32 and rounded when stored), unfused and
// fused (core/fuse).
func TestCUDAEmulated(t *testing.T) {
	for _, o := range testops.All {
		for _, dt := range []ir.DType{ir.Float32, ir.Float64, ir.Float16, ir.BFloat16} {
			t.Run(o.Name+"_"+dt.String(), func(t *testing.T) {
				t.Parallel()
				spec, err := o.Spec(dt)
				if err != nil {
					t.Fatal(err)
				}
				both := func(spec *ir.Spec, seed uint64) {
					runCUDAEmulated(t, spec, nil, hostbuf.RandomInputs(spec, o.Positive, seed), tolerance(dt))
					f, err := pipeline.Fuse(spec, fuse.Options{SplitAlways: true})
					if err != nil {
						t.Fatal(err)
					}
					if f != spec {
						runCUDAEmulated(t, f, nil, hostbuf.RandomInputs(f, o.Positive, seed), tolerance(dt))
					}
				}
				both(spec, 1)
				if len(spec.InputsDecl()) == 0 {
					return
				}
				g, _, err := o.GradSpec(dt)
				if err != nil {
					t.Fatal(err)
				}
				both(g, 2)
				if dt == ir.Float32 { // the tangent op: its statements are the forward's kind
					tg, _, err := o.TangentSpec(dt)
					if err != nil {
						t.Fatal(err)
					}
					both(tg, 3)
				}
			})
		}
	}
}

// TestCUDAEmulatedScatter runs the scatter statements under the GPU
// default schedule: the points distributed over threads, combining with
// atomic adds (for the 16-bit types, compare-and-swap loops).
func TestCUDAEmulatedScatter(t *testing.T) {
	for _, o := range scatterOps {
		for _, dt := range []ir.DType{ir.Float32, ir.Float64, ir.Float16, ir.BFloat16} {
			t.Run(o.Name+"_"+dt.String(), func(t *testing.T) {
				spec, err := o.Spec(dt)
				if err != nil {
					t.Fatal(err)
				}
				mod, err := CUDASource(spec, nil, "nf_test")
				if err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(mod.Source, "atomicAdd(&") && !strings.Contains(mod.Source, "nf_atomic_add(&") {
					t.Fatalf("the scatter has no atomic add:\n%s", mod.Source)
				}
				runCUDAEmulated(t, spec, nil, hostbuf.RandomInputs(spec, false, 3), tolerance(dt))
			})
		}
	}
}

func runCUDAEmulated(t *testing.T, spec *ir.Spec, scheds []loops.Schedule, inputs [][]float64, tol float64) {
	t.Helper()
	mod, err := CUDASource(spec, scheds, "nf_test")
	if err != nil {
		t.Fatal(err)
	}
	k, err := cudaemu.Compile(context.Background(), spec, mod, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	want, err := interp.Run(spec, inputs)
	if err != nil {
		t.Fatal(err)
	}
	bufs := hostbuf.New(spec, inputs)
	defer bufs.Free()
	bufs.Poison(spec)
	if err := k.Run(bufs.Ptr); err != nil {
		t.Fatal(err)
	}
	compareWritten(t, spec, bufs, want, tol, mod.Source)
	// A 16-bit scatter rounds at each add, atomic or not (as PyTorch's
	// index_add_ on 16-bit CUDA tensors does): where points share an
	// element, it cannot round once; the tolerance above still holds it.
	if spec.DType.Half() && !scatters(spec, scheds, loops.GPUSchedule) {
		roundsLikeTheInterpreter(t, spec, bufs, want)
	}
}

// roundsLikeTheInterpreter: a 16-bit kernel computes in float32 and the
// interpreter in float64, and both round each stored element to nearest
// even, so nearly every element must be bit-equal; a kernel that rounded
// any other way (truncating, or twice) differs in about half of them by
// one unit in the last place, which the tolerance alone lets through.
func roundsLikeTheInterpreter(t *testing.T, spec *ir.Spec, bufs *hostbuf.Buffers, want [][]float64) {
	t.Helper()
	n, differ := 0, 0
	for i, td := range spec.Tensors {
		if td.Role == ir.RoleInput {
			continue
		}
		for j, g := range bufs.Get(i) {
			w := want[i][j]
			n++
			if g != w && !(g != g && w != w) {
				differ++
			}
		}
	}
	if differ > 2+n/10 {
		t.Errorf("%s: %d of %d stored elements differ from the interpreter's in their bits", spec.DType, differ, n)
	}
}

// TestCUDAEmulatedGPUTiled lowers every reduction statement of every test
// op and its gradient with random GPU tilings (thread and register
// factors, steps, staged reads in shared memory) or block reductions
// (warp shuffles), runs the modules on the host with real barriers and
// shuffles and compares them with the reference interpreter.
func TestCUDAEmulatedGPUTiled(t *testing.T) {
	for _, o := range testops.All {
		for _, dt := range []ir.DType{ir.Float32, ir.Float64, ir.Float16} {
			t.Run(o.Name+"_"+dt.String(), func(t *testing.T) {
				t.Parallel()
				rng := rand.New(rand.NewPCG(uint64(len(o.Name)), uint64(dt)))
				specs := []*ir.Spec{}
				spec, err := o.Spec(dt)
				if err != nil {
					t.Fatal(err)
				}
				specs = append(specs, spec)
				if len(spec.InputsDecl()) > 0 {
					g, _, err := o.GradSpec(dt)
					if err != nil {
						t.Fatal(err)
					}
					specs = append(specs, g)
				}
				for si, spec := range specs {
					for trial := 0; trial < 3; trial++ {
						scheds := make([]loops.Schedule, len(spec.Stmts))
						tiled := false
						for i, st := range spec.Stmts {
							scheds[i] = loops.GPUSchedule(spec, i)
							if g := randomGPUTiling(rng, spec, st); g != nil {
								scheds[i] = loops.Schedule{GPU: g}
								if rng.IntN(3) == 0 {
									scheds[i] = loops.Schedule{GPUReduce: &loops.GPUReduction{Threads: 32 * int64(1+rng.IntN(4))}}
								}
								tiled = true
							}
						}
						if !tiled {
							return
						}
						runCUDAEmulated(t, spec, scheds, hostbuf.RandomInputs(spec, o.Positive, uint64(si+1)), tolerance(dt))
					}
				}
			})
		}
	}
}

// randomGPUTiling draws a valid GPU tiling of st, or nil for a statement
// that has none (no reduction, or a scatter).
func randomGPUTiling(rng *rand.Rand, spec *ir.Spec, st *ir.BoundStmt) *loops.GPUTiling {
	if st.Stmt.Reduce == ir.Assign || len(st.Spatial) == 0 {
		return nil
	}
	g := &loops.GPUTiling{}
	threads := int64(1)
	for _, ax := range st.Spatial {
		t := int64(1) << rng.IntN(6)
		for t > 1 && (t > ax.Extent || threads*t > 256) {
			t /= 2
		}
		r := int64(1 + rng.IntN(4))
		for r > 1 && t*r > ax.Extent {
			r--
		}
		threads *= t
		g.Spatial = append(g.Spatial, loops.GPUAxis{Axis: ax.Name, Threads: t, Regs: r})
	}
	for _, ax := range st.Reduction {
		var divs []int64
		for d := int64(1); d <= ax.Extent; d++ {
			if ax.Extent%d == 0 {
				divs = append(divs, d)
			}
		}
		g.Steps = append(g.Steps, loops.GPUStep{Axis: ax.Name, Tile: divs[rng.IntN(len(divs))]})
	}
	for i := range loops.StageableReads(st) {
		if rng.IntN(3) > 0 {
			g.TryStage(spec, st, i)
		}
	}
	if err := g.Check(spec, st); err != nil {
		panic(err)
	}
	return g
}

// TestCUDAEmulatedDeterministicScatter runs the scatter statements and the
// index-tensor ops of the table under the GPU defaults with the atomic adds
// off (NEOFLOW_DETERMINISTIC, torchbridge's deterministic): no atomicAdd in
// the module, and the interpreter's values.
func TestCUDAEmulatedDeterministicScatter(t *testing.T) {
	ops := append([]testops.Op(nil), scatterOps...)
	for _, name := range []string{"embedding_bag", "gcn_scatter"} {
		o, ok := testops.Lookup(name)
		if !ok {
			t.Fatalf("no op %s", name)
		}
		ops = append(ops, o)
	}
	for _, o := range ops {
		for _, dt := range []ir.DType{ir.Float32, ir.Float16} {
			t.Run(o.Name+"_"+dt.String(), func(t *testing.T) {
				spec, err := o.Spec(dt)
				if err != nil {
					t.Fatal(err)
				}
				specs := []*ir.Spec{spec}
				if !strings.HasPrefix(o.Name, "sc_") {
					g, _, err := o.GradSpec(dt)
					if err != nil {
						t.Fatal(err)
					}
					specs = append(specs, g)
				}
				for _, s := range specs {
					scheds := make([]loops.Schedule, len(s.Stmts))
					for i := range scheds {
						scheds[i] = loops.GPUSchedule(s, i)
						scheds[i].Atomic = false
					}
					mod, err := CUDASource(s, scheds, "nf_test")
					if err != nil {
						t.Fatal(err)
					}
					if strings.Contains(mod.Source, "atomicAdd(&") || strings.Contains(mod.Source, "nf_atomic_add(&") {
						t.Fatalf("an atomic add in the deterministic module:\n%s", mod.Source)
					}
					runCUDAEmulated(t, s, scheds, hostbuf.RandomInputs(s, false, 3), tolerance(dt))
				}
			})
		}
	}
}

// scatters reports whether a statement of spec lowers as a scatter under
// scheds (the defaults def gives when nil).
func scatters(spec *ir.Spec, scheds []loops.Schedule, def func(*ir.Spec, int) loops.Schedule) bool {
	for i := range spec.Stmts {
		s := def(spec, i)
		if scheds != nil {
			s = scheds[i]
		}
		if s.Scatter {
			return true
		}
	}
	return false
}
