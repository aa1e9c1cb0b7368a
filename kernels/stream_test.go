package kernels

import (
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"github.com/neoflow/neoflow/core/interp"
	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/parse"
	"github.com/neoflow/neoflow/core/sema"
	"github.com/neoflow/neoflow/internal/hostbuf"
	"github.com/neoflow/neoflow/kernels/cgen"
)

// streamSpec is an elementwise op writing Y of rows x 1024 elements of dt
// (whose lane loops store whole 64-byte vectors) and a small Z.
func streamSpec(t *testing.T, dt ir.DType, rows int64) *ir.Spec {
	t.Helper()
	op, err := parse.Parse("Y[i, j] = X[i, j] * 2.0 + 1.0\nZ[j] = X[0, j] - 1.0", parse.Options{Name: "stream", Inputs: []string{"X"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := sema.Check(op); err != nil {
		t.Fatal(err)
	}
	spec, err := sema.Specialize(op, dt, [][]int64{{rows, 1024}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// A tensor of cgen.StreamMinBytes and up is stored with streaming stores
// (float32 and float64), a smaller one is not, and the results equal the
// interpreter's on 1 and 2 threads, also with the large output at an
// address that is not 64-byte aligned (the plain stores then).
func TestStreamingStores(t *testing.T) {
	b := testBuilder(t)
	for _, c := range []struct {
		dt     ir.DType
		rows   int64
		stream string
	}{{ir.Float32, 1024, "nf_stream_ps"}, {ir.Float64, 512, "nf_stream_pd"}, {ir.Float32, 64, ""}} {
		spec := streamSpec(t, c.dt, c.rows)
		k, err := b.Build(spec)
		if err != nil {
			t.Fatal(err)
		}
		src := k.Source()
		streams := strings.Count(src, "(nf_sp, nf_load_")
		if c.stream == "" && (streams != 0 || strings.Contains(src, "nf_stream_p")) || c.stream != "" && (streams != 1 || !strings.Contains(src, c.stream+"(nf_sp") || !strings.Contains(src, "nf_sfence();")) {
			t.Fatalf("%s %d rows: %d streaming stores, want %q:\n%s", c.dt, c.rows, streams, c.stream, src)
		}
		inputs := hostbuf.RandomInputs(spec, false, 3)
		want, err := interp.Run(spec, inputs)
		if err != nil {
			t.Fatal(err)
		}
		for _, threads := range []int{1, 2} {
			bufs := hostbuf.New(spec, inputs)
			if err := k.Launch(bufs.Ptr, threads); err != nil {
				t.Fatal(err)
			}
			compareWritten(t, spec, bufs, want, tolerance(c.dt), src)
			bufs.Free()
		}
		if c.stream != "" {
			misaligned(t, k, spec, inputs, want[tensorIndex(spec, "Y")])
		}
		_ = k.Close()
	}
}

// misaligned launches k with Y 4 bytes past a 64-byte boundary and
// compares it with want.
func misaligned(t *testing.T, k *Kernel, spec *ir.Spec, inputs [][]float64, want []float64) {
	t.Helper()
	bufs := hostbuf.New(spec, inputs)
	defer bufs.Free()
	size := int64(spec.DType.Size())
	n := spec.Tensor("Y").Elems()
	raw := make([]byte, n*size+128)
	var pin runtime.Pinner
	pin.Pin(&raw[0])
	defer pin.Unpin()
	off := (64 - int(uintptr(unsafe.Pointer(&raw[0]))%64)) % 64
	p := unsafe.Pointer(&raw[off+4])
	ptrs := append([]unsafe.Pointer(nil), bufs.Ptr...)
	ptrs[tensorIndex(spec, "Y")] = p
	if err := k.Launch(ptrs, 2); err != nil {
		t.Fatal(err)
	}
	for j := int64(0); j < n; j++ {
		var got float64
		if spec.DType == ir.Float32 {
			got = float64(*(*float32)(unsafe.Add(p, j*size)))
		} else {
			got = *(*float64)(unsafe.Add(p, j*size))
		}
		if !same(got, want[j], tolerance(spec.DType)) {
			t.Fatalf("%s, Y 4 bytes off a 64-byte boundary: Y[%d] = %v, want %v", spec.DType, j, got, want[j])
		}
	}
}

// The streaming threshold can be turned off (0): the same op is then
// rendered without streaming stores.
func TestStreamingStoresOff(t *testing.T) {
	saved := cgen.StreamMinBytes
	cgen.StreamMinBytes = 0
	defer func() { cgen.StreamMinBytes = saved }()
	src, err := Source(streamSpec(t, ir.Float32, 1024))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(src, "nf_stream_") || strings.Contains(src, "immintrin") {
		t.Fatalf("streaming stores with StreamMinBytes 0:\n%s", src)
	}
}

// tensorIndex is the position of tensor name in spec.Tensors.
func tensorIndex(spec *ir.Spec, name string) int {
	for i, t := range spec.Tensors {
		if t.Name == name {
			return i
		}
	}
	return -1
}

// An output the kernel reads back (a later statement reads it) is not
// streamed, whatever its size; the one nothing reads is.
func TestStreamingSkipsWhatIsReadBack(t *testing.T) {
	op, err := parse.Parse("Y[i, j] = X[i, j] * 2.0\nZ[i, j] = Y[i, j] + 1.0", parse.Options{Name: "reread", Inputs: []string{"X"}, Outputs: []string{"Y", "Z"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := sema.Check(op); err != nil {
		t.Fatal(err)
	}
	spec, err := sema.Specialize(op, ir.Float32, [][]int64{{1024, 1024}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	src, err := Source(spec)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(src, "nf_stream_ps(nf_sp") != 1 || !strings.Contains(src, "float *nf_sp = &t_Z[") {
		t.Fatalf("want Z streamed and Y not:\n%s", src)
	}
	run(t, spec, hostbuf.RandomInputs(spec, false, 5), 2, tolerance(ir.Float32))
}
