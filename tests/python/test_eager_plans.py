"""Eager autograd calls reuse a plan per specialization (autograd._Plan):
what the first call of a shape looked up, later calls only launch. These
check that a reused plan never gives a wrong answer or skips a check."""

import neoflow
import pytest
import torch

D = torch.float64
CELL = "Cn[b,u] = C[b,u] + X[b,u] * sigmoid(G[b,u])\nHn[b,u] = tanh(Cn[b,u]) * sigmoid(G[b,u + 4])"


def reference(c, x, g):
    cn = c + x * torch.sigmoid(g[:, :4])
    return cn, torch.tanh(cn) * torch.sigmoid(g[:, 4:])


def grads(outs, leaves, gs):
    keep = [(o, g) for o, g in zip(outs, gs) if g is not None]
    return torch.autograd.grad([o for o, _ in keep], leaves, [g for _, g in keep], allow_unused=True)


def _plan(op):
    """The op's one eager plan."""
    (plan,) = op.function.plans.values()
    return plan


@pytest.fixture(scope="module")
def cell():
    return neoflow.op(CELL, name="plan_cell", outputs=["Cn", "Hn"])


def test_repeated_calls_with_changing_inputs_match_pytorch(cell):
    """Many calls of one shape, their inputs' layout, the inputs needing a gradient and the output
    gradients given changing between calls: every call's outputs and gradients match PyTorch's."""
    torch.manual_seed(0)
    for i in range(12):
        c, x = torch.randn(3, 4, dtype=D), torch.randn(4, 3, dtype=D).t()  # x: a transposed view
        g = torch.randn(3, 8, dtype=D)
        if i % 3 == 1:
            g = torch._neg_view(g)  # lazily negated: its memory is not negated
        needs = [(True, True, True), (False, True, True), (True, False, False)][i % 3]
        leaves = [t.detach().clone().requires_grad_(n) for t, n in zip((c, x, g), needs)]
        refs = [t.detach().clone().requires_grad_(n) for t, n in zip((c, x, g), needs)]
        out_grads = [torch.randn(3, 4, dtype=D), None if i % 2 else torch.randn(3, 4, dtype=D)]
        got, want = cell(*leaves, sizes={"u": 4}), reference(*refs)
        for a, b in zip(got, want):
            torch.testing.assert_close(a, b)
        wrt = [t for t in leaves if t.requires_grad]
        ref_wrt = [t for t in refs if t.requires_grad]
        for a, b in zip(grads(got, wrt, out_grads), grads(want, ref_wrt, out_grads)):
            torch.testing.assert_close(a, b)


def test_double_backward_after_plans_exist(cell):
    leaves = [torch.randn(*s, dtype=D, requires_grad=True) for s in [(3, 4), (3, 4), (3, 8)]]
    for _ in range(2):  # the second call finds the plan
        cn, hn = cell(*leaves, sizes={"u": 4})
        (hn.sum() + cn.sum()).backward()
    assert torch.autograd.gradgradcheck(lambda *t: cell(*t, sizes={"u": 4}), leaves)


def test_bad_calls_are_still_refused_once_a_plan_exists(cell):
    leaves = [torch.randn(*s, dtype=D, requires_grad=True) for s in [(3, 4), (3, 4), (3, 8)]]
    cell(*leaves, sizes={"u": 4})
    with pytest.raises(ValueError, match="dimensions"):
        cell(leaves[0], leaves[1], torch.randn(24, dtype=D, requires_grad=True), sizes={"u": 4})
    with pytest.raises(TypeError, match="dtype"):
        cell(leaves[0], leaves[1], torch.ones(3, 8, dtype=torch.uint8), sizes={"u": 4})
    with pytest.raises(TypeError, match="takes 3 inputs"):
        cell(leaves[0], leaves[1], sizes={"u": 4})


def test_tuning_replaces_the_kernels_plans_launch(tmp_path):
    """neoflow.tune forgets an op's kernels: calls after it use the rebuilt (tuned) kernels, not a plan's."""
    mm = neoflow.op("Y[i,j] += A[i,k] * B[k,j]", name="plan_mm")
    a, b = torch.randn(16, 24, requires_grad=True), torch.randn(24, 8, requires_grad=True)
    mm(a, b).sum().backward()
    before = [p.kernel for p in mm.function.plans.values()]
    neoflow.tune(mm, a, b, trials=3, progress=False, force=True)
    y = mm(a, b)
    y.sum().backward()
    after = [p.kernel for p in mm.function.plans.values()]
    assert after and all(k is not old for k in after for old in before)
    torch.testing.assert_close(y, a @ b)


def test_gradient_kernel_is_built_during_the_forward():
    """On the CPU the first forward of a shape starts building the saving gradient op's kernel on a
    helper thread; the backward then finds it built and its gradients match PyTorch's."""
    op = neoflow.op(CELL, name="plan_cell_ahead", outputs=["Cn", "Hn"])
    torch.manual_seed(3)
    c, x, g = (torch.randn(*s, dtype=D, requires_grad=True) for s in ((5, 4), (5, 4), (5, 8)))
    cn, hn = op(c, x, g, sizes={"u": 4})
    plan = _plan(op)
    assert plan.grad_future is not None and plan.grad_kernel is None
    plan.grad_future.result(timeout=120)
    assert plan.gop._kernels, "the gradient kernel was not built ahead"
    built = next(iter(plan.gop._kernels.values()))
    gc_, gh = torch.randn(5, 4, dtype=D), torch.randn(5, 4, dtype=D)
    got = torch.autograd.grad((cn, hn), (c, x, g), (gc_, gh))
    assert plan.grad_kernel is built, "the backward built the gradient kernel again"
    refs = [t.detach().clone().requires_grad_() for t in (c, x, g)]
    want = torch.autograd.grad(reference(*refs), refs, (gc_, gh))
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b)


def test_no_gradient_kernel_is_built_ahead_while_tuning(tmp_path):
    """Under a tuning session a build tunes the kernel from the caller's thread: nothing is built ahead."""
    neoflow.configure(cache_dir=tmp_path / "cache")
    try:
        op = neoflow.op(CELL, name="plan_cell_tuned", outputs=["Cn", "Hn"])
        c, x, g = (torch.randn(*s, dtype=D, requires_grad=True) for s in ((3, 4), (3, 4), (3, 8)))
        with neoflow.tune_session(trials=2, progress=False) as report:
            cn, hn = op(c, x, g, sizes={"u": 4})
            assert _plan(op).grad_future is None
            (cn.sum() + hn.sum()).backward()
        assert [r.kernel for r in report] == ["plan_cell_tuned", "plan_cell_tuned_grad"]
    finally:
        neoflow.configure()


def test_an_add_passes_its_gradient_on():
    """An add's gradient is the output's gradient itself, as PyTorch's add passes it on: no gradient
    kernel runs; values, one input needing a gradient, double backward and gradcheck as in PyTorch."""
    add = neoflow.op("Y[i, j] = X[i, j] + Z[i, j]", name="plan_add")
    x, z = torch.randn(3, 5, dtype=D, requires_grad=True), torch.randn(3, 5, dtype=D, requires_grad=True)
    g = torch.randn(3, 5, dtype=D)
    gx, gz = torch.autograd.grad(add(x, z), (x, z), g)
    assert torch.equal(gx, g) and torch.equal(gz, g)
    assert _plan(add).gop is None and _plan(add).passed == {0: 0, 1: 0}
    (gz,) = torch.autograd.grad(add(x.detach(), z), (z,), g)  # only Z needs one: a plan of its own
    assert torch.equal(gz, g)
    # a graph built through the backward goes the general way
    (gx,) = torch.autograd.grad(add(x, z).pow(2).sum(), (x,), create_graph=True)
    (ggx,) = torch.autograd.grad(gx.sum(), (x,))
    torch.testing.assert_close(ggx, torch.full_like(x, 2.0))
    assert torch.autograd.gradcheck(add, (x, z))
    assert torch.autograd.gradgradcheck(add, (x, z))


def test_gradients_passed_on_beside_computed_ones_with_permuted_outputs():
    """d_A is d_Y passed on, d_B and d_C come from the kernel, with the outputs returned in another
    order than written and one output's gradient missing in some calls."""
    op = neoflow.op("Y[i, j] = A[i, j] + B[j] * C[i, j]\nW[i] += C[i, j] * 3.0", name="plan_mixed", outputs=["W", "Y"])

    def ref(a, b, c):
        return (c * 3.0).sum(1), a + b * c

    for missing in (None, 0, 1):
        leaves = [torch.randn(*s, dtype=D, requires_grad=True) for s in ((4, 3), (3,), (4, 3))]
        refs = [t.detach().clone().requires_grad_() for t in leaves]
        gs = [torch.randn(4, dtype=D), torch.randn(4, 3, dtype=D)]
        if missing is not None:
            gs[missing] = None
        got = grads(op(*leaves), leaves, gs)
        want = grads(ref(*refs), refs, gs)
        for a, b in zip(got, want):
            if b is None:
                assert a is None or not a.any()
            else:
                torch.testing.assert_close(a, b)
    plan = _plan(op)
    assert plan.passed == {0: 1} and plan.gop is not None and len(plan.gop.outputs) == 2


def test_no_gradient_is_passed_on_across_shapes():
    """Y[i] = X[i] + Z[i] over the first 4 of 6 elements: X's gradient is d_Y padded with zeros, not d_Y."""
    add = neoflow.op("Y[i] = X[i] + Z[i]", name="plan_add_part")
    x, z = torch.randn(6, dtype=D, requires_grad=True), torch.randn(6, dtype=D, requires_grad=True)
    g = torch.randn(4, dtype=D)
    gx, gz = torch.autograd.grad(add(x, z, sizes={"i": 4}), (x, z), g)
    want = torch.cat([g, torch.zeros(2, dtype=D)])
    torch.testing.assert_close(gx, want)
    torch.testing.assert_close(gz, want)
    assert _plan(add).passed == {}
