"""neoflow in one minute: define a new operator as an index expression, run
it on CPU tensors and check it against plain PyTorch."""

import time

import neoflow
import torch

# Capsule convolution (NeoFlow paper, section 2): every input and output
# element is a 4x4 matrix; stride 2.
capsule = neoflow.op("C[b,k,p,q,i,j] += A[b,c,p*S+r,q*S+s,i,t] * B[k,c,r,s,t,j]", name="capsule", S=2)
print("op:", capsule)

a = torch.randn(2, 8, 15, 15, 4, 4)
b = torch.randn(16, 8, 3, 3, 4, 4)

t0 = time.perf_counter()
c = capsule(a, b)  # first call: infer shapes, prove bounds, generate C, compile (or reuse the cache)
first = time.perf_counter() - t0
t0 = time.perf_counter()
c = capsule(a, b)
again = time.perf_counter() - t0

# The same operator in plain PyTorch: unfold the windows, then contract.
patches = a.unfold(2, 3, 2).unfold(3, 3, 2)  # b c p q i t r s
want = torch.einsum("bcpqitrs,kcrstj->bkpqij", patches, b)

err = (c - want).abs().max().item()
print(f"output shape {tuple(c.shape)}; max |neoflow - pytorch| = {err:.2e}")
print(f"first call {first * 1e3:.1f} ms (build or cache), next call {again * 1e3:.2f} ms")
assert torch.allclose(c, want, rtol=1e-4, atol=1e-4), "mismatch against PyTorch"
print("OK: neoflow matches PyTorch")
