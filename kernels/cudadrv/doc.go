// Package cudadrv loads CUDA modules and launches their kernels through
// the CUDA driver API (gorgonia.org/cu), in PyTorch's primary context and
// on the stream PyTorch passes.
//
// The binding is compiled only with the build tag "cuda" (driver.go),
// into the second, CUDA build of the c-shared library; without the tag
// (stub.go) Available is false and every call returns an error that says
// so. gorgonia.org/cu calls cuInit when the process loads it and exits
// the whole process when that fails, so the CUDA build is loaded only
// where torch.cuda.is_available() (pyext/neoflow/_lib.py).
//
// Rules (../../shared/DESIGN.md): every call runs synchronously on the
// calling thread, after making the device's primary context current
// (the context PyTorch's runtime API uses); a launch runs the module's
// functions in order on the given stream, which is
// torch.cuda.current_stream(device).cuda_stream (0 when PyTorch's current
// stream is its default stream, which is then where PyTorch itself
// launches). A launch does not synchronize the host and allocates no
// device memory: PyTorch allocates every buffer, so a launch can be
// captured in a CUDA graph.
package cudadrv
