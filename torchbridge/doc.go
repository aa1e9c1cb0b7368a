// Package torchbridge is the runtime behind neoflow's C API: it keeps the
// registry of defined ops and built kernels that PyTorch calls into.
//
// Control-plane calls (Init, Define, Specialize, Release) take and return
// protobuf messages from package api and may take locks, compile and touch
// the disk. The data plane is Launch: it finds a kernel by id in a
// copy-on-write table read with one atomic load, and calls it on raw
// pointers — no allocation, no encoding, no lock. Each launch still
// enters Go, so the runtime keeps spare Ps beyond the calls' threads
// (procs.go): a launch must not wait for one.
//
// A background worker picks and tunes schedules behind the calls and
// swaps faster kernels into their ids between two launches: C kernels
// (background.go, picks.go) and CUDA kernels (background_cuda.go).
//
// Ids are process-local: op ids and kernel ids start at 1 and are never
// reused; 0 means "none".
package torchbridge
