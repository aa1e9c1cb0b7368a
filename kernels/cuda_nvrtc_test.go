package kernels

import (
	"bytes"
	"testing"

	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/internal/nvrtctest"
	"github.com/neoflow/neoflow/internal/testops"
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
