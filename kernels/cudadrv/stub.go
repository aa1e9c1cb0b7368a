//go:build !cuda

package cudadrv

import (
	"github.com/pkg/errors"

	"github.com/neoflow/neoflow/kernels/cgen"
)

var errNoCUDA = errors.New("this neoflow library was built without CUDA support: install a wheel built where CUDA headers were found (setup.py builds the CUDA variant when CUDA_HOME or NEOFLOW_CUDA_INCLUDE points at cuda.h)")

// Available reports whether this build has the CUDA driver binding.
func Available() bool { return false }

// Arch is the compute capability of device ordinal, times ten.
func Arch(ordinal int) (int, error) { return 0, errNoCUDA }

// Module is a loaded CUDA module.
type Module struct{}

// Load loads a module image on device ordinal.
func Load(ordinal int, image []byte, launches []cgen.Launch) (*Module, error) {
	return nil, errNoCUDA
}

// Launch runs the module's functions in order on stream.
func (m *Module) Launch(stream uintptr, ptrs []uintptr) error { return errNoCUDA }
