"""Kernels are unloaded once no op uses them: a process that defines, calls
and drops thousands of ops keeps a bounded number of memory maps (Linux
refuses new maps past vm.max_map_count)."""

import os
import subprocess
import sys
import textwrap

import neoflow
import torch


def test_define_call_drop_2000_ops_keeps_maps_bounded(tmp_path):
    code = textwrap.dedent(
        """
        import gc, torch, neoflow

        def maps():
            with open("/proc/self/maps") as f:
                return sum(1 for _ in f)

        x = torch.randn(8)
        w = torch.randn(8, requires_grad=True)
        neoflow.op("Y[i] = X[i] * 0.5")(x)
        gc.collect()
        start = maps()
        for k in range(2000):
            op = neoflow.op(f"Y[i] = X[i] * {k + 1.5}")
            torch.testing.assert_close(op(x), x * (k + 1.5))
            if k % 100 == 0:  # some with gradients too: their gradient kernels go as well
                op(w).sum().backward()
            del op
        gc.collect()
        print(start, maps())
        """
    )
    env = dict(os.environ, NEOFLOW_CACHE_DIR=str(tmp_path / "cache"), NEOFLOW_IDLE_KERNELS="16")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=900, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    start, end = map(int, proc.stdout.split())
    # Loaded for good, 2,020 kernels would hold about 10,000 maps; 16 idle ones hold about 80.
    assert end - start < 250, (start, end)


def test_a_kernel_in_use_survives_other_ops_dropping_it():
    """Two ops of one expression share a kernel: dropping one leaves the
    other's kernel loaded; dropping both lets it go."""
    neoflow.configure(idle_kernels=0)
    try:
        a = neoflow.op("Y[i] = X[i] * 7.25")
        b = neoflow.op("Y[i] = X[i] * 7.25")
        x = torch.randn(5)
        torch.testing.assert_close(a(x), 7.25 * x)
        torch.testing.assert_close(b(x), 7.25 * x)
        del a
        import gc

        gc.collect()
        torch.testing.assert_close(b(x), 7.25 * x)
        kernel_id = b.specialize(x).kernel_id
        del b
        gc.collect()
        c = neoflow.op("Y[i] = X[i] * 7.25")
        torch.testing.assert_close(c(x), 7.25 * x)  # loaded again
        assert c.specialize(x).kernel_id != kernel_id
    finally:
        neoflow.configure(idle_kernels=64)
