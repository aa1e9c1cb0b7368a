"""C kernel launches (nf_launch, capi/launch.c): the kernels the Go core
loaded run without entering Go; every other launch still gets the Go
core's error, naming the problem."""

from __future__ import annotations

import neoflow
import pytest
import torch
from neoflow import _launch, _lib


def _kernel():
    op = neoflow.op("Y[i] = X[i] * 2.0 + 1.0", name="launch_scale")
    x = torch.arange(8, dtype=torch.float32)
    return op, op.specialize(x), x


def test_a_launch_runs_the_loaded_kernel():
    op, k, x = _kernel()
    y = torch.empty_like(x)
    _lib.launch(k.kernel_id, k.pack(x.data_ptr(), y.data_ptr()), 2)
    torch.testing.assert_close(y, x * 2 + 1)
    torch.testing.assert_close(op(x), x * 2 + 1)


@pytest.mark.parametrize("kernel_id", [1 << 20, 60000])  # past C's copy of the table, and inside it
def test_an_unknown_kernel_is_refused(kernel_id):
    _, k, x = _kernel()
    with pytest.raises(neoflow.Error, match=f"unknown kernel id {kernel_id}"):
        _lib.launch(kernel_id, k.pack(x.data_ptr(), x.data_ptr()), 1)


def test_a_wrong_buffer_count_is_refused():
    _, k, x = _kernel()
    y = torch.empty_like(x)
    with pytest.raises(neoflow.Error, match=r"takes 2 buffers, got 3"):
        _lib.launch(k.kernel_id, k.pack(x.data_ptr(), y.data_ptr()) + bytes(8), 1)


# neoflow._launch (pyext/neoflow/_launch*.c): Kernel.run's launch in C, and Op.__call__'s lookup without autograd.


def test_the_c_launch_returns_the_inputs_then_what_it_allocated():
    _, k, x = _kernel()
    bufs = _launch.run(k.spec, (x,))
    assert len(bufs) == 2 and bufs[0] is x
    torch.testing.assert_close(bufs[1], x * 2 + 1)
    assert _launch.run(k.spec, [x])[0] is x  # a list of inputs, as Kernel.run takes


def test_the_c_launch_leaves_copies_to_python():
    """A non-contiguous input or a lazily negated view is not launched on in C (None): Kernel.run copies it."""
    op, k, _ = _kernel()
    strided = torch.arange(16, dtype=torch.float32)[::2]
    negated = torch.arange(8, dtype=torch.float32).neg().conj_physical()._neg_view()
    for t in (strided, negated):
        assert _launch.run(k.spec, (t,)) is None
        torch.testing.assert_close(op(t), t.resolve_neg() * 2 + 1)
    assert _launch.run(k.spec, (torch.empty(8, device="meta"),)) is None  # no host memory: never launched in C


def test_a_failed_c_launch_raises_the_go_core_error():
    _, k, x = _kernel()
    spec = (1 << 20, *k.spec[1:])  # an id the Go core never gave
    with pytest.raises(neoflow.Error, match=f"unknown kernel id {1 << 20}"):
        _launch.run(spec, (x,))


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: _launch.run((), 1), r"run\(spec: tuple, tensors: tuple \| list\)"),
        (lambda: _launch.run([]), r"run\(spec: tuple"),
        (lambda: _launch.call({}, {}, [1]), r"call\(kernels: dict, sized: dict, tensors: tuple\)"),
        (lambda: _launch.signature(3), r"signature\(tensors: tuple \| list\)"),
        (lambda: _launch.signature((3,)), "'int' object has no attribute 'dtype'"),
        (
            lambda: _launch.run((1,), (torch.zeros(2),)),
            r"a spec is \(kernel id, allocs: tuple, threads, tail, scratch\)",
        ),
        (lambda: _launch.run((1, ((1,),), int, 0, None), (torch.zeros(2),)), r"an alloc is \(callable, args: tuple"),
        (lambda: _launch.run((1, ((int, (), 3),), int, 0, None), (torch.zeros(2),)), r"an alloc is"),
        (lambda: _launch.run((1, (0,), int, 0, None), (torch.zeros(2),)), "a scratch offset without a scratch"),
        (lambda: _launch.run((1, (0,), int, 0, (1, 2)), (torch.zeros(2),)), r"a scratch is \(spare: list, alloc\)"),
        (lambda: _launch.forward({}, None, [1]), r"forward\(plans: dict, ctx, tensors: tuple\)"),
        (lambda: _launch.op_call(None, [1]), r"op_call\(op, tensors: tuple\)"),
        (lambda: _launch.configure(1, 2, 3, 4, (int,)), "plain_types holds two types"),
        (lambda: _launch.configure(1, 2, 3, 4, 5), "must be tuple"),
    ],
)
def test_bad_arguments_to_the_c_launch_are_refused(call, message):
    with pytest.raises((TypeError, AttributeError, ValueError), match=message):
        call()


def test_ops_of_several_outputs_and_large_buffers_launch_in_c():
    """Outputs come back in the op's order, and buffers above neoflow.memory's threshold come from it."""
    op = neoflow.op("Hi[i] = X[i] + 1.0; Lo[i] = X[i] - 1.0", name="launch_two", outputs=["Lo", "Hi"])
    x = torch.randn(1 << 17)  # 512 KiB: neoflow.memory's
    lo, hi = op(x)
    torch.testing.assert_close(lo, x - 1)
    torch.testing.assert_close(hi, x + 1)
    k = op.specialize(x)
    assert k.spec is not None and k.spec[1][0][0] is not torch.empty


def test_a_kernel_for_every_size_launches_in_c_with_its_sizes():
    op = neoflow.op("Y[i, j] = X[i, j] * 3.0", name="launch_sized")
    for n in (3, 5, 7, 9):  # after the second shape, one kernel for every value of i
        x = torch.randn(n, 4)
        torch.testing.assert_close(op(x), x * 3)
    assert any(k.spec and k.spec[3] for k in op._dynamic.sized.values())


def test_the_usual_calls_take_the_c_path_and_others_the_general_way():
    """op_call launches without autograd and applies the op's Function under it; anything else (sizes,
    a tensor subclass, forward-mode AD) is left to Op.__call__'s general way, which gives the same values."""
    op = neoflow.op("Y[i] = X[i] * Z[i]", name="launch_usual")
    x, z = torch.randn(6), torch.randn(6)
    torch.testing.assert_close(op(x, z), x * z)  # builds the kernel: the general way
    torch.testing.assert_close(_launch.op_call(op, (x, z)), x * z)
    xg = x.clone().requires_grad_()
    op(xg, z).sum().backward()  # builds the Function and its plan
    y = _launch.op_call(op, (xg, z))
    assert y.grad_fn is not None
    (g,) = torch.autograd.grad(y.sum(), xg)
    torch.testing.assert_close(g, z)

    class Sub(torch.Tensor):
        pass

    assert _launch.op_call(op, (x.as_subclass(Sub), z)) is None
    import torch.autograd.forward_ad as fwAD

    with fwAD.dual_level():
        assert _launch.op_call(op, (fwAD.make_dual(x, torch.ones(6)), z)) is None


def test_a_source_tree_without_the_extension_imports_and_names_the_fix(tmp_path):
    """The package's Python files alone (a source tree nobody built, as the docs' API pages import it): import
    works, and the first use of the C launcher raises neoflow.Error naming the fix."""
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    src = Path(neoflow.__file__).parent
    shutil.copytree(src, tmp_path / "neoflow", ignore=shutil.ignore_patterns("*.so", "__pycache__"))
    code = (
        "import neoflow, torch\n"
        "from neoflow import _lib\n"
        "assert isinstance(_lib.launcher, _lib._MissingExtension)\n"
        "try:\n"
        "    _lib.launcher.run((), (torch.zeros(1),))\n"
        "except neoflow.Error as e:\n"
        "    print(e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "extension module _launch is missing" in out.stdout and "pip install ." in out.stdout, out.stdout


def test_a_forward_only_ops_temporaries_share_one_scratch_block():
    """A forward-only op's kernel places its temporaries in one block that its launches reuse (none is
    allocated per call); values equal PyTorch's on every call, from one thread and from several at once
    (a launch that finds the block taken makes its own), and a call that keeps the temporaries gets them."""
    import threading

    src = "M[i] max= X[i, j]; S[i] += exp(X[i, j] - M[i]); Y[i, j] = exp(X[i, j] - M[i]) / S[i]"
    op = neoflow.op(src, name="launch_scratch", outputs=["Y"], forward_only=True)
    x = torch.randn(64, 300)
    k = op.specialize(x)
    assert k.scratch and k.spec[4] is not None and any(isinstance(a, int) for a in k.spec[1]), k.spec
    for _ in range(3):
        torch.testing.assert_close(op(x), torch.softmax(x, 1))
    assert len(k.spec[4][0]) == 1  # the spare block, back after each launch
    xs = [torch.randn(64, 300) for _ in range(8)]
    got = [None] * len(xs)

    def call(i):
        for _ in range(20):
            got[i] = op(xs[i])

    threads = [threading.Thread(target=call, args=(i,)) for i in range(len(xs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for x_, y in zip(xs, got):
        torch.testing.assert_close(y, torch.softmax(x_, 1))
    kept = op._launch((x,), None, keep=True)
    assert [t.shape for t in kept[1:]] == [k.buffers[i][2] for i in k.temps]
    torch.testing.assert_close(kept[1].reshape(-1), x.max(1).values)


def test_an_op_with_gradients_allocates_its_temporaries():
    op = neoflow.op("M[i] max= X[i, j]; Y[i, j] = X[i, j] - M[i]", name="launch_no_scratch")
    x = torch.randn(8, 5)
    assert not op.specialize(x).scratch and op.specialize(x).spec[4] is None
