package kernels

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"testing"
	"unsafe"

	"github.com/neoflow/neoflow/core/interp"
	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/loops"
	"github.com/neoflow/neoflow/internal/hostbuf"
	"github.com/neoflow/neoflow/internal/testops"
)

// symbolicCase is an op whose input shapes follow from the values of its
// size variables.
type symbolicCase struct {
	name, src string
	shapes    func(s []int64) [][]int64
}

func (c symbolicCase) spec(t *testing.T, dt ir.DType, s []int64) *ir.Spec {
	t.Helper()
	spec, err := testops.Op{Name: c.name, Src: c.src, Shapes: c.shapes(s)}.Spec(dt)
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// buildSymbolic builds c's kernel from its specializations at sizes a
// and b.
func buildSymbolic(t *testing.T, c symbolicCase, dt ir.DType, a, b []int64) (*Kernel, error) {
	t.Helper()
	var sizes []loops.Size
	for i := range a {
		sizes = append(sizes, loops.Size{Name: fmt.Sprintf("s%d", i), A: a[i], B: b[i]})
	}
	return testBuilder(t).BuildSymbolic(context.Background(), c.spec(t, dt, a), c.spec(t, dt, b), sizes)
}

// runSymbolic launches k at sizes s, on 1 and 3 threads with the outputs
// poisoned, and compares every written tensor with the interpreter's run
// of c specialized at s.
func runSymbolic(t *testing.T, k *Kernel, c symbolicCase, dt ir.DType, s []int64) {
	t.Helper()
	spec := c.spec(t, dt, s)
	shapes, err := k.Shapes(s)
	if err != nil {
		t.Fatal(err)
	}
	for i, td := range spec.Tensors {
		if !slices.Equal(shapes[i], td.Shape) {
			t.Fatalf("sizes %v: the kernel's %s is %v, the specialization's %v", s, td.Name, shapes[i], td.Shape)
		}
	}
	inputs := hostbuf.RandomInputs(spec, false, uint64(s[0]))
	want, err := interp.Run(spec, inputs)
	if err != nil {
		t.Fatal(err)
	}
	values := slices.Clone(s)
	var pin runtime.Pinner
	pin.Pin(&values[0])
	defer pin.Unpin()
	for _, threads := range []int{1, 3} {
		bufs := hostbuf.New(spec, inputs)
		bufs.Poison(spec)
		if err := k.Launch(append(slices.Clone(bufs.Ptr), unsafe.Pointer(&values[0])), threads); err != nil {
			t.Fatal(err)
		}
		compareWritten(t, spec, bufs, want, tolerance(dt), k.Source())
		bufs.Free()
	}
}

var symbolicCases = []symbolicCase{
	{"linear", "Y[n, j] += X[n, k] * W[j, k]", func(s []int64) [][]int64 { return [][]int64{{s[0], 5}, {3, 5}} }},
	{"bias_grad", "G[c] += D[n, c]", func(s []int64) [][]int64 { return [][]int64{{s[0], 6}} }},
	{"sequence", "Y[b, t, h] = X[b, t, h] * 2.0 + Z[h]", func(s []int64) [][]int64 { return [][]int64{{2, s[0], 9}, {9}} }},
	{"softmax", "M[n] max= X[n, j]\nE[n, j] = exp(X[n, j] - M[n])\nS[n] += E[n, j]\nY[n, j] = E[n, j] / S[n]",
		func(s []int64) [][]int64 { return [][]int64{{s[0], 7}} }},
	{"lanes_over_size", "Y[i, j] = X[j, i] + 1.0", func(s []int64) [][]int64 { return [][]int64{{3, s[0]}} }},
	{"two_sizes", "Y[n, t] = X[n, t] * B[n]", func(s []int64) [][]int64 { return [][]int64{{s[0], s[1]}, {s[0]}} }},
	{"guarded", "Y[n, j] = where(j > 0, X[n, j - 1], 0.0) + X[n, j]", func(s []int64) [][]int64 { return [][]int64{{s[0], 4}} }},
}

// TestSymbolicKernel builds each case's kernel from two sizes and runs it
// at sizes it was not built at: 1, sizes that divide no vector width, and
// larger ones.
func TestSymbolicKernel(t *testing.T) {
	for _, dt := range []ir.DType{ir.Float32, ir.Float64} {
		for _, c := range symbolicCases {
			t.Run(fmt.Sprintf("%s_%s", c.name, dt), func(t *testing.T) {
				a, b := []int64{8, 5}, []int64{12, 3}
				k, err := buildSymbolic(t, c, dt, a[:nsizes(c)], b[:nsizes(c)])
				if err != nil {
					t.Fatal(err)
				}
				defer k.Close()
				for _, s := range [][]int64{{8, 5}, {12, 3}, {1, 1}, {2, 7}, {17, 1}, {33, 9}} {
					runSymbolic(t, k, c, dt, s[:nsizes(c)])
				}
			})
		}
	}
}

// nsizes is how many size variables c's shapes take.
func nsizes(c symbolicCase) int {
	if c.name == "two_sizes" {
		return 2
	}
	return 1
}

// TestSymbolicRefusals: ops whose kernel would depend on a size some other
// way get no symbolic kernel, with an error saying why.
func TestSymbolicRefusals(t *testing.T) {
	for _, c := range []symbolicCase{
		// Y's extent is half the size.
		{"stride", "Y[i] = X[2 * i]", func(s []int64) [][]int64 { return [][]int64{{s[0]}} }},
		// the second input's dimension is the size plus one.
		{"plus_one", "Y[n] = X[n] + Z[n + 1]", func(s []int64) [][]int64 { return [][]int64{{s[0]}, {s[0] + 1}} }},
	} {
		k, err := buildSymbolic(t, c, ir.Float32, []int64{8}, []int64{12})
		if err == nil {
			k.Close()
			t.Errorf("%s: built a symbolic kernel", c.name)
			continue
		}
		t.Logf("%s: %v", c.name, err)
	}
}
