package gotests

import (
	"fmt"
	"math"
	"math/rand"
	"os"
	"os/exec"
	"slices"
	"testing"

	"github.com/neoflow/neoflow/core/interp"
	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/loops"
	"github.com/neoflow/neoflow/internal/hostbuf"
	"github.com/neoflow/neoflow/internal/testops"
	"github.com/neoflow/neoflow/kernels"
	"github.com/neoflow/neoflow/kernels/cache"
	"github.com/neoflow/neoflow/torchbridge"
)

// opCases is the one table of test ops (internal/testops/ops.json).
var opCases = testops.All

var dtypes = []ir.DType{ir.Float32, ir.Float64}

// cacheDir is this run's kernel cache, shared by every Builder of the run;
// builder is the Builder most tests use.
var (
	cacheDir string
	builder  *kernels.Builder
	noCC     bool
)

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	loops.MinParallelWork = 0 // small test shapes exercise the parallel code
	dir, err := os.MkdirTemp("", "neoflow-gotests-*")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	cacheDir = dir
	if _, err := exec.LookPath("cc"); err != nil {
		noCC = true
	} else if builder, err = newBuilder(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// newBuilder opens a Builder on this run's cache with the default compiler.
func newBuilder() (*kernels.Builder, error) {
	return kernels.NewBuilder(kernels.Options{CacheDir: cacheDir, Version: torchbridge.Version})
}

func needCC(t *testing.T) {
	t.Helper()
	if noCC {
		t.Fatal("no C compiler (cc) on PATH: the kernels need one")
	}
}

// randomInputs draws standard normal inputs from a fixed seed (or, for
// positive, uniform ones in [0.5, 1.5)), rounded to dt so that the kernel
// and the interpreter see the same values; an integer input gets
// hostbuf's integers (an index tensor's within its Limit).
func randomInputs(spec *ir.Spec, seed int64, positive ...bool) [][]float64 {
	rng := rand.New(rand.NewSource(seed))
	ints := hostbuf.RandomInputs(spec, false, uint64(seed))
	var out [][]float64
	for k, td := range spec.InputsDecl() {
		if td.DType.Integer() {
			out = append(out, ints[k])
			continue
		}
		d := make([]float64, td.Elems())
		for i := range d {
			v := rng.NormFloat64()
			if len(positive) > 0 && positive[0] {
				v = 0.5 + rng.Float64()
			}
			if spec.DType == ir.Float32 {
				v = float64(float32(v))
			}
			d[i] = v
		}
		out = append(out, d)
	}
	return out
}

// launch runs k on inputs in Go-allocated buffers (internal/hostbuf) and
// returns every tensor of spec.Tensors as float64. Outputs and
// temporaries start as NaN so that an element the kernel skips shows up.
func launch(k *kernels.Kernel, spec *ir.Spec, inputs [][]float64) ([][]float64, error) {
	bufs := hostbuf.New(spec, inputs)
	defer bufs.Free()
	if err := k.Launch(bufs.Ptr, 2); err != nil {
		return nil, err
	}
	out := make([][]float64, len(spec.Tensors))
	for i, td := range spec.Tensors {
		out[i] = slices.Clone(bufs.Get(i)[:td.Elems()])
	}
	return out, nil
}

func tolerance(dt ir.DType) float64 {
	if dt == ir.Float32 {
		return 1e-4
	}
	return 1e-9
}

// within reports |got-want| <= tol*(1+|want|); NaN matches only NaN and an
// infinity only itself.
func within(got, want, tol float64) bool {
	if math.IsNaN(got) || math.IsNaN(want) {
		return math.IsNaN(got) && math.IsNaN(want)
	}
	if math.IsInf(want, 0) {
		return got == want
	}
	return math.Abs(got-want) <= tol*(1+math.Abs(want))
}

// unravel turns a flat row-major offset into a multi-index.
func unravel(flat int, shape []int64) []int64 {
	idx := make([]int64, len(shape))
	for d := len(shape) - 1; d >= 0; d-- {
		idx[d] = int64(flat) % shape[d]
		flat /= int(shape[d])
	}
	return idx
}

// TestOpsMatchInterpreter compiles every spine operator to a C kernel in
// float32 and float64 and compares every output and temporary with the
// reference interpreter, and every written tensor's shape with the table.
func TestOpsMatchInterpreter(t *testing.T) {
	needCC(t)
	for ci, c := range opCases {
		for _, dt := range dtypes {
			t.Run(c.Name+"/"+dt.String(), func(t *testing.T) {
				spec, err := c.Spec(dt)
				if err != nil {
					t.Fatalf("%s (%s): %v", c.Name, c.Desc, err)
				}
				written := 0
				for _, td := range spec.Tensors {
					if td.Role == ir.RoleInput {
						continue
					}
					written++
					want, ok := c.Want[td.Name]
					if !ok {
						t.Errorf("%s (%s): %s %s has shape %v, which the table does not list", c.Name, c.Desc, td.Role, td.Name, td.Shape)
						continue
					}
					if !slices.Equal(td.Shape, want) {
						t.Errorf("%s (%s): %s %s shape: got %v want %v", c.Name, c.Desc, td.Role, td.Name, td.Shape, want)
					}
				}
				if written != len(c.Want) {
					t.Errorf("%s (%s): got %d outputs and temporaries, want %d (%v)", c.Name, c.Desc, written, len(c.Want), c.Want)
				}
				if t.Failed() {
					return
				}

				inputs := randomInputs(spec, int64(1000+ci), c.Positive)
				want, err := interp.Run(spec, inputs)
				if err != nil {
					t.Fatalf("%s (%s): interpreter: %v", c.Name, c.Desc, err)
				}
				k, err := builder.Build(spec)
				if err != nil {
					t.Fatalf("%s (%s): build: %v", c.Name, c.Desc, err)
				}
				got, err := launch(k, spec, inputs)
				if err != nil {
					t.Fatalf("%s (%s): launch: %v", c.Name, c.Desc, err)
				}
				tol := tolerance(dt)
				for i, td := range spec.Tensors {
					if td.Role == ir.RoleInput {
						continue
					}
					if len(want[i]) != len(got[i]) {
						t.Errorf("%s %s %s: got %d elements want %d", c.Name, dt, td.Name, len(got[i]), len(want[i]))
						continue
					}
					bad := 0
					for j := range want[i] {
						if within(got[i][j], want[i][j], tol) {
							continue
						}
						if bad < 3 {
							t.Errorf("%s (%s) %s %s %s%v: got %v want %v (tol %g)",
								c.Name, c.Desc, dt, td.Role, td.Name, unravel(j, td.Shape), got[i][j], want[i][j], tol)
						}
						bad++
					}
					if bad > 0 {
						t.Errorf("%s %s %s: %d of %d elements differ", c.Name, dt, td.Name, bad, len(want[i]))
					}
				}
			})
		}
	}
}

// TestSecondBuilderHitsCache builds every op of the table with the shared
// Builder, then opens a second Builder on the same cache directory: every
// kernel must come from the cache.
func TestSecondBuilderHitsCache(t *testing.T) {
	needCC(t)
	specs := make(map[string]*ir.Spec)
	for _, c := range opCases {
		for _, dt := range dtypes {
			spec, err := c.Spec(dt)
			if err != nil {
				t.Fatalf("%s (%s): %v", c.Name, c.Desc, err)
			}
			if _, err := builder.Build(spec); err != nil {
				t.Fatalf("%s %s: first build: %v", c.Name, dt, err)
			}
			specs[c.Name+"/"+dt.String()] = spec
		}
	}
	second, err := newBuilder()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range opCases {
		for _, dt := range dtypes {
			k, err := second.Build(specs[c.Name+"/"+dt.String()])
			if err != nil {
				t.Fatalf("%s %s: second build: %v", c.Name, dt, err)
			}
			if got := k.Outcome(); got != cache.Hit {
				t.Errorf("%s (%s) %s: second Builder outcome: got %v want %v", c.Name, c.Desc, dt, got, cache.Hit)
			}
		}
	}
	st := second.Stats()
	if want := int64(len(opCases) * len(dtypes)); st.Hits != want || st.Misses != 0 || st.Rebuilt != 0 {
		t.Errorf("second Builder stats: got %+v want %d hits and nothing else", st, want)
	}
}
