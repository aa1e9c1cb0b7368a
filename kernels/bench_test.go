package kernels

import (
	"os/exec"
	"runtime"
	"testing"

	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/internal/hostbuf"
	"github.com/neoflow/neoflow/internal/testops"
)

// BenchmarkMatmul256 measures the default schedule on a 256^3 float32
// matmul.
func BenchmarkMatmul256(b *testing.B) {
	o := testops.Op{Name: "mm256", Src: "C[i, j] += A[i, k] * B[k, j]", Shapes: [][]int64{{256, 256}, {256, 256}}}
	spec, err := o.Spec(ir.Float32)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := exec.LookPath("cc"); err != nil {
		b.Skip("no C compiler")
	}
	dir := b.TempDir()
	bl, err := NewBuilder(Options{CacheDir: dir, Version: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	k, err := bl.Build(spec)
	if err != nil {
		b.Fatal(err)
	}
	bufs := hostbuf.New(spec, hostbuf.RandomInputs(spec, false, 1))
	defer bufs.Free()
	b.ResetTimer()
	for range b.N {
		if err := k.Launch(bufs.Ptr, runtime.NumCPU()); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(2*256*256*256*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}
