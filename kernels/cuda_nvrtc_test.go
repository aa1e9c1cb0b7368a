package kernels

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/neoflow/neoflow/core/fuse"
	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/loops"
	"github.com/neoflow/neoflow/core/parse"
	"github.com/neoflow/neoflow/core/pipeline"
	"github.com/neoflow/neoflow/core/sema"
	"github.com/neoflow/neoflow/internal/nvrtctest"
	"github.com/neoflow/neoflow/internal/testops"
	"github.com/neoflow/neoflow/kernels/cache"
	"github.com/neoflow/neoflow/kernels/nvrtc"
)

// TestCUDACompiles compiles the CUDA module of every test op, its
// gradient (unfused and fused: epilogues in their reduction's kernel, a
// group's contractions side by side in one) and every scatter op, in
// every dtype, with NVRTC to CUBIN for sm_80 and sm_90: the generated source (the 16-bit conversions' inline
// PTX included) is valid CUDA, with every launch's entry in the image.
func TestCUDACompiles(t *testing.T) {
	lib := nvrtctest.Library(t)
	var specs []*ir.Spec
	for _, dt := range []ir.DType{ir.Float32, ir.Float64, ir.Float16, ir.BFloat16} {
		for _, o := range testops.All {
			s, err := o.Spec(dt)
			if err != nil {
				t.Fatal(err)
			}
			specs = append(specs, s)
			if len(s.InputsDecl()) > 0 {
				g, _, err := o.GradSpec(dt)
				if err != nil {
					t.Fatal(err)
				}
				specs = append(specs, g)
				if f, err := pipeline.Fuse(g, fuse.Options{}); err == nil && f != g {
					specs = append(specs, f)
				}
			}
			if f, err := pipeline.Fuse(s, fuse.Options{}); err == nil && f != s {
				specs = append(specs, f)
			}
		}
		specs = append(specs, epilogueSpec(t, dt), groupSpecSized(t, dt, [][]int64{{16, 96}, {16, 64}, {96, 64}}))
		for _, o := range scatterOps {
			s, err := o.Spec(dt)
			if err != nil {
				t.Fatal(err)
			}
			specs = append(specs, s)
		}
	}
	for _, spec := range specs {
		t.Run(spec.Op.Name+"_"+spec.DType.String(), func(t *testing.T) {
			mod, err := CUDASource(spec, nil, "nf_test")
			if err != nil {
				t.Fatal(err)
			}
			for _, arch := range []int{80, 90} {
				img, log, err := lib.Compile(mod.Source, spec.Op.Name+".cu", nvrtc.Target{Arch: arch})
				if err != nil {
					t.Fatalf("%v\n%s", err, mod.Source)
				}
				if log != "" {
					t.Errorf("sm_%d: NVRTC warns:\n%s", arch, log)
				}
				for _, l := range mod.Launches {
					if !bytes.Contains(img, []byte(l.Entry)) {
						t.Errorf("sm_%d: the image lacks entry %s", arch, l.Entry)
					}
				}
			}
		})
	}
}

// TestBuildCUDACaches builds a CUDA kernel through the Builder twice: the
// second build is a cache hit with the same image, and another
// architecture is another entry.
func TestBuildCUDACaches(t *testing.T) {
	lib := nvrtctest.Library(t)
	b, err := NewBuilder(Options{CacheDir: t.TempDir(), Version: "test", NVRTCDirs: []string{lib.Path}})
	if err != nil {
		t.Fatal(err)
	}
	o, _ := testops.Lookup("conv_pad")
	spec, err := o.Spec(ir.Float32)
	if err != nil {
		t.Fatal(err)
	}
	k1, err := b.BuildCUDA(context.Background(), spec, nil, 90)
	if err != nil {
		t.Fatal(err)
	}
	k2, err := b.BuildCUDA(context.Background(), spec, nil, 90)
	if err != nil {
		t.Fatal(err)
	}
	if k1.Outcome() != cache.Miss || k2.Outcome() != cache.Hit || !bytes.Equal(k1.Image(), k2.Image()) {
		t.Fatalf("outcomes %v, %v; same image %v", k1.Outcome(), k2.Outcome(), bytes.Equal(k1.Image(), k2.Image()))
	}
	if k1.Target() != (nvrtc.Target{Arch: 90}) || !strings.HasPrefix(k1.Launches()[0].Entry, "nf_conv_pad_") {
		t.Fatalf("target %v, launches %+v", k1.Target(), k1.Launches())
	}
	k3, err := b.BuildCUDA(context.Background(), spec, nil, 80)
	if err != nil {
		t.Fatal(err)
	}
	if k3.Outcome() != cache.Miss || k3.Key() == k1.Key() {
		t.Fatalf("sm_80 after sm_90: outcome %v, same key %v", k3.Outcome(), k3.Key() == k1.Key())
	}
	// Without NVRTC the error says where it looked.
	nb, err := NewBuilder(Options{CacheDir: t.TempDir(), Version: "test", NVRTCDirs: []string{t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nb.BuildCUDA(context.Background(), spec, nil, 90); err == nil || !strings.Contains(err.Error(), "no NVRTC library") {
		t.Fatalf("no NVRTC: %v", err)
	}
}

// TestCUDATiledInRegisters compiles the default GPU tiling of the
// benchmark's contractions at their sizes (float32 GEMM 4096³, a capsule
// convolution, an LSTM gate product in both dtypes) for sm_90 and reads
// ptxas's resource report: every accumulator must live in registers, with
// no stack frame and no spills (a register array indexed at run time
// would live in local memory, an order of magnitude slower).
func TestCUDATiledInRegisters(t *testing.T) {
	lib := nvrtctest.Library(t)
	target, err := lib.TargetFor(90)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, src string
		consts    map[string]int64
		shapes    [][]int64
		dt        ir.DType
	}{
		{"gemm", "C[i,j] += A[i,k] * B[k,j]", nil, [][]int64{{4096, 4096}, {4096, 4096}}, ir.Float32},
		{"capsule", "C[b,k,p,q,i,j] += A[b,c,p*S+r,q*S+s,i,t] * B[k,c,r,s,t,j]", map[string]int64{"S": 2},
			[][]int64{{16, 8, 14, 14, 4, 4}, {16, 8, 3, 3, 4, 4}}, ir.Float32},
		{"lstm_f32", "WX[b,g] += W[g,k] * X[b,k]", nil, [][]int64{{4096, 1024}, {64, 1024}}, ir.Float32},
		{"lstm_f64", "WX[b,g] += W[g,k] * X[b,k]", nil, [][]int64{{4096, 1024}, {64, 1024}}, ir.Float64},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			opts := parse.Options{Consts: map[string]parse.ConstValue{}}
			for k, v := range c.consts {
				opts.Consts[k] = parse.ConstValue{Int: v}
			}
			op, err := parse.Parse(c.src, opts)
			if err != nil {
				t.Fatal(err)
			}
			spec, err := sema.Specialize(op, c.dt, c.shapes, nil)
			if err != nil {
				t.Fatal(err)
			}
			s := loops.GPUSchedule(spec, 0)
			if s.GPU == nil {
				t.Fatalf("no GPU tiling: %s", s)
			}
			mod, err := CUDASource(spec, nil, "nf_"+c.name)
			if err != nil {
				t.Fatal(err)
			}
			_, log, err := lib.Compile(mod.Source, c.name+".cu", target, "--ptxas-options=-v")
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(log, "0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads") {
				t.Errorf("%s: the accumulators do not stay in registers:\n%s", s, log)
			}
			t.Logf("%s: %s", s, regexp.MustCompile(`Used \d+ registers[^\n]*`).FindString(log))
		})
	}
}
