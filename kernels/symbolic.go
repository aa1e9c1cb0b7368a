package kernels

import (
	"context"
	"runtime"
	"slices"
	"unsafe"

	"github.com/pkg/errors"

	"github.com/neoflow/neoflow/core/bounds"
	"github.com/neoflow/neoflow/core/loops"
	"github.com/neoflow/neoflow/core/pipeline"
)

// BuildSymbolic builds one C kernel for every value of sizes
// (pipeline.Symbolic): at specializes the op at given values of
// the sizes. The kernel takes its tensors and then the sizes' values, an
// int64 array in sizes' order (Kernel.Sizes); its caller checks that
// every tensor's shape follows from those values (Shapes).
func (b *Builder) BuildSymbolic(ctx context.Context, at pipeline.SpecAt, sizes []loops.Size) (*Kernel, error) {
	fn, err := pipeline.Symbolic(at, sizes, pipeline.CPU)
	if err != nil {
		return nil, errors.Wrap(err, "kernel with symbolic extents")
	}
	return b.BuildFunc(ctx, fn)
}

// BuildSymbolicCUDA is BuildSymbolic for a CUDA device of compute
// capability arch: the loop nests lowered for the GPU
// (loops.SymbolicGPUSchedule) and compiled with NVRTC. Each function of
// the module takes the tensors' pointers and then the sizes' values, as
// long long parameters in Func().Sizes order (cgen.CUDAModule.Sizes); its
// caller checks the launch guards (Func().Guards).
func (b *Builder) BuildSymbolicCUDA(ctx context.Context, at pipeline.SpecAt, sizes []loops.Size, arch int) (*CUDAKernel, error) {
	fn, err := pipeline.Symbolic(at, sizes, pipeline.GPU)
	if err != nil {
		return nil, errors.Wrap(err, "CUDA kernel with symbolic extents")
	}
	return b.BuildCUDAFunc(ctx, fn, arch)
}

// Shapes are the shapes of k's tensors for these values of its sizes (in
// Sizes order): each dimension a size names takes its value. Values that
// break a launch guard (Guards) are refused.
func (k *Kernel) Shapes(values []int64) ([][]int64, error) {
	if len(values) != len(k.sizes) {
		return nil, errors.Errorf("kernel %s takes %d sizes, got %d", k.Symbol(), len(k.sizes), len(values))
	}
	val := map[string]int64{}
	for i, s := range k.sizes {
		if values[i] < 1 || values[i] > bounds.MaxSize {
			return nil, errors.Errorf("kernel %s: size %s = %d is outside [1, %d]", k.Symbol(), s[1:], values[i], bounds.MaxSize)
		}
		val[s] = values[i]
	}
	for _, g := range k.guards {
		if !g.Holds(val) {
			return nil, errors.Errorf("kernel %s: sizes %v break its launch guard %s", k.Symbol(), values, g)
		}
	}
	out := make([][]int64, len(k.spec.Tensors))
	for i, t := range k.spec.Tensors {
		out[i] = append([]int64(nil), t.Shape...)
		for d, s := range t.Sizes {
			if s != "" {
				out[i][d] = val[s]
			}
		}
	}
	return out, nil
}

// LaunchSized launches a kernel with symbolic extents: bufs holds one
// pointer per tensor, of the shapes Shapes(values) gives, and values the
// sizes' values in Sizes order (Launch's rules apply to bufs).
func (k *Kernel) LaunchSized(bufs []unsafe.Pointer, values []int64, nthreads int) error {
	if _, err := k.Shapes(values); err != nil {
		return err
	}
	sizes := slices.Clone(values)
	var pin runtime.Pinner
	pin.Pin(&sizes[0])
	defer pin.Unpin()
	return k.Launch(append(slices.Clone(bufs), unsafe.Pointer(&sizes[0])), nthreads)
}
