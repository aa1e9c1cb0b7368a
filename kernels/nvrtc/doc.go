// Package nvrtc compiles CUDA C to device code with NVIDIA's run-time
// compiler, NVRTC, loaded with dlopen from a path the caller finds (the
// installed PyTorch's CUDA libraries, or CUDA_HOME): NVRTC is never
// linked, because its soname changes with every CUDA major version, and
// this package needs neither CUDA headers nor a GPU. Compiling needs no
// device either, so tests compile every generated kernel on machines
// without one.
//
// Compile asks for CUBIN, machine code for one architecture (sm_XY),
// when this NVRTC supports the device's architecture, and otherwise for
// PTX of the newest virtual architecture it supports that the device
// runs (compute_XY, XY <= the device's), which the driver compiles when
// it loads the module. Options never include --use_fast_math: kernels
// keep IEEE NaN, infinity and signed-zero semantics, as on the CPU.
package nvrtc
