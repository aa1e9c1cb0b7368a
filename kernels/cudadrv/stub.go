//go:build !cuda

package cudadrv

import (
	"unsafe"

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

// Unload unloads the module.
func (m *Module) Unload() error { return errNoCUDA }

// Name is the name of device ordinal.
func Name(ordinal int) (string, error) { return "", errNoCUDA }

// Bench runs modules on one device for the tuner.
type Bench struct{}

// NewBench allocates buffers of sizes bytes on device ordinal.
func NewBench(ordinal int, sizes []int64) (*Bench, error) { return nil, errNoCUDA }

// Write copies buffer i from host memory src to the device.
func (b *Bench) Write(i int, src unsafe.Pointer) error { return errNoCUDA }

// Read copies buffer i from the device to host memory dst.
func (b *Bench) Read(i int, dst unsafe.Pointer) error { return errNoCUDA }

// Time runs m once and returns the seconds each of its functions took.
func (b *Bench) Time(m *Module) ([]float64, error) { return nil, errNoCUDA }

// Close frees the bench.
func (b *Bench) Close() {}
