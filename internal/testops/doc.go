// Package testops is neoflow's one table of test operators, ops.json:
// matrix products, convolutions and their gradient forms, pooling,
// softmax and layer norm, reductions, shuffles, the intrinsics and index
// and value arithmetic. Every backend runs it: the Go tests check each op
// and its gradient on the reference interpreter, the C backend and the
// CUDA emulator (kernels, tests/go), and pytest checks each against its
// plain-PyTorch reference with gradcheck (tests/python/ops_table.py reads
// the same file). A new op goes in ops.json only.
//
// Each entry holds the op's name, a description, its source, its inputs
// in order, constants, a "test" variant (input shapes, sizes, constants
// that depend on the shapes, and the shape every written tensor must get)
// and optionally a "bench" variant with larger shapes, whether inputs must
// be positive, and the PyTorch reference as a Python expression over the
// input names (torch, F = torch.nn.functional and idx are in scope:
// idx(n) is arange(n), idx(n, 1) the same as a column).
package testops
