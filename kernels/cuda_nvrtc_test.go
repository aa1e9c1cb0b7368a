package kernels

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/internal/nvrtctest"
	"github.com/neoflow/neoflow/internal/testops"
	"github.com/neoflow/neoflow/kernels/cache"
	"github.com/neoflow/neoflow/kernels/nvrtc"
)

// TestCUDACompiles compiles the CUDA module of every test op, its
// gradient and every scatter op with NVRTC to CUBIN for sm_80 and sm_90:
// the generated source is valid CUDA, with every launch's entry in the
// image.
func TestCUDACompiles(t *testing.T) {
	lib := nvrtctest.Library(t)
	var specs []*ir.Spec
	for _, dt := range []ir.DType{ir.Float32, ir.Float64} {
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
			}
		}
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
