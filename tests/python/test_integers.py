"""Integer tensors (issue 31): int32, int64 and bool inputs read as values, int32 and int64 tensors read as
indices (gathers, E[I[b], d]) and written through (scatters, Y[Dst[e], f] += ...), casts to integer outputs,
with the float inputs' gradients against PyTorch and gradcheck in float64, the index range check before each
launch (out of range, negative), generated gathers (Hypothesis), several threads, a fresh process, and clear
errors for index tensors of the wrong dtype, misplaced casts and a gradient asked of an integer input."""

import re

import neoflow
import pytest
import torch
from conftest import tol
from hypothesis import given, settings
from hypothesis import strategies as st


@pytest.fixture(scope="module")
def bag():
    return neoflow.Op("O[b, d] += LUT[I[b, k], d]", name="bag", inputs=["LUT", "I"])


@pytest.mark.parametrize("itype", [torch.int32, torch.int64], ids=["i32", "i64"])
def test_embedding_bag_forward_and_backward(bag, dtype, itype):
    lut = torch.randn(50, 6, dtype=dtype, requires_grad=True)
    idx = torch.randint(0, 50, (7, 3), dtype=itype)
    out = bag(lut, idx)
    ref = lut[idx.long()].sum(1)
    torch.testing.assert_close(out, ref, **tol(dtype))
    g = torch.randn_like(out)
    (got,) = torch.autograd.grad(out, lut, g)
    (want,) = torch.autograd.grad(ref, lut, g)
    torch.testing.assert_close(got, want, **tol(dtype))


def test_embedding_bag_gradcheck(bag):
    lut = torch.randn(9, 4, dtype=torch.float64, requires_grad=True)
    idx = torch.tensor([[0, 3, 3], [8, 0, 1], [2, 2, 2], [5, 8, 7]])
    assert torch.autograd.gradcheck(lambda w: bag(w, idx), (lut,))
    assert torch.autograd.gradgradcheck(lambda w: bag(w, idx), (lut,))


def test_repeated_indices_accumulate(bag):
    """Every row that several bags read gets the sum of their gradients (the scatter-add)."""
    lut = torch.zeros(4, 2, dtype=torch.float64, requires_grad=True)
    idx = torch.tensor([[1, 1], [1, 3]])
    bag(lut, idx).sum().backward()
    assert lut.grad.tolist() == [[0, 0], [3, 3], [0, 0], [1, 1]]


def test_gather_of_logits_by_label():
    """A top-1 gather (cross-entropy's picked logit without a one-hot): Y[b] = X[b, L[b]]."""
    pick = neoflow.Op("Y[b] = X[b, L[b]]", inputs=["X", "L"])
    x = torch.randn(6, 5, dtype=torch.float64, requires_grad=True)
    lab = torch.randint(0, 5, (6,))
    torch.testing.assert_close(pick(x, lab), x.gather(1, lab[:, None])[:, 0])
    assert torch.autograd.gradcheck(lambda t: pick(t, lab), (x,))


def test_nested_index_tensors():
    """An index tensor indexed by another: E[I[J[b]], d]; both are checked."""
    op = neoflow.Op("Y[b, d] = E[I[J[b]], d]", inputs=["E", "I", "J"])
    e = torch.randn(8, 3, dtype=torch.float64)
    i = torch.tensor([7, 0, 2, 5])
    j = torch.tensor([3, 3, 0, 1, 2])
    torch.testing.assert_close(op(e, i, j), e[i[j]])
    with pytest.raises(IndexError, match="index tensor J holds 4"):
        op(e, i, torch.tensor([4]))


@pytest.mark.parametrize("itype", [torch.int32, torch.int64, torch.bool], ids=["i32", "i64", "bool"])
def test_integer_inputs_read_as_values(dtype, itype):
    op = neoflow.Op("Y[i] = X[i] * M[i] + M[i]", inputs=["X", "M"])
    x = torch.randn(10, dtype=dtype, requires_grad=True)
    m = torch.randint(0, 2 if itype == torch.bool else 100, (10,)).to(itype)
    y = op(x, m)
    assert y.dtype == dtype
    ref = x * m.to(dtype) + m.to(dtype)
    torch.testing.assert_close(y, ref, **tol(dtype))
    (g,) = torch.autograd.grad(y.sum(), x)
    torch.testing.assert_close(g, m.to(dtype), **tol(dtype))


def test_integer_only_inputs_compute_in_float32():
    op = neoflow.Op("Y[i] = M[i] / 2", inputs=["M"])
    y = op(torch.tensor([1, 2, 3], dtype=torch.int32))
    assert y.dtype == torch.float32 and y.tolist() == [0.5, 1.0, 1.5]


def test_out_of_range_and_negative_indices_raise(bag):
    lut = torch.randn(10, 4)
    with pytest.raises(IndexError, match=r"index tensor I holds 10 at position \(1, 0\), outside \[0, 10\)"):
        bag(lut, torch.tensor([[0, 1], [10, 2]]))
    with pytest.raises(IndexError, match=r"holds -1 at position \(0, 1\).*negative indices are not allowed"):
        bag(lut, torch.tensor([[0, -1], [1, 2]]))
    big = torch.tensor([[0, 2**40]])
    with pytest.raises(IndexError, match="holds 1099511627776"):
        bag(lut, big)


@pytest.mark.parametrize("itype", [torch.int32, torch.int64])
@pytest.mark.parametrize("n", [1, 2, 7, 64, 1001])
def test_host_index_range_matches_torch(itype, n):
    from neoflow import _lib

    info = torch.iinfo(itype)
    g = torch.Generator().manual_seed(n)
    t = torch.randint(-1000, 1000, (n,), generator=g).to(itype)
    for pos, value in ((n // 2, info.min), (n - 1, info.max), (0, -3)):
        t[pos] = value
        assert _lib.index_range(t.data_ptr(), n, t.element_size()) == (int(t.min()), int(t.max()))
    with pytest.raises(ValueError):
        _lib.index_range(t.data_ptr(), n, 2)


def test_index_range_is_the_least_extent_it_indexes():
    op = neoflow.Op("Y[b, d] = A[I[b], d] + B[I[b], d]", inputs=["A", "B", "I"])
    a, b = torch.randn(7, 2), torch.randn(4, 2)
    i = torch.tensor([0, 3])
    torch.testing.assert_close(op(a, b, i), a[i] + b[i])
    with pytest.raises(IndexError, match=r"outside \[0, 4\)"):
        op(a, b, torch.tensor([0, 4]))


def test_wrong_index_dtype_is_a_clear_error(bag):
    lut = torch.randn(10, 4)
    with pytest.raises(
        neoflow.Error, match="I is read as an index, so it must be an int32 or int64 tensor, got float32"
    ):
        bag(lut, torch.zeros(2, 2))
    with pytest.raises(neoflow.Error, match="got bool"):
        bag(lut, torch.zeros(2, 2, dtype=torch.bool))
    with pytest.raises(TypeError, match="torch.int32, torch.int64 and torch.bool"):
        bag(lut, torch.zeros(2, 2, dtype=torch.uint8))


def test_integer_inputs_have_no_gradient(bag):
    lut = torch.randn(10, 4, dtype=torch.float64, requires_grad=True)
    idx = torch.tensor([[1, 2]])
    gop, _ = bag.grad_op(lut, idx)
    assert gop.outputs == ("d_LUT",)
    with pytest.raises(neoflow.Error, match="input I is an int64 tensor, which has no gradient"):
        bag.grad_op(lut, idx, wrt=[True, True])


def test_float_inputs_still_share_one_dtype():
    with pytest.raises(neoflow.Error, match="floating-point inputs of op bag must share one dtype"):
        neoflow.Op("Y[i] = A[i] + B[i]", name="bag")(torch.randn(2), torch.randn(2, dtype=torch.float64))


def test_torch_compile_through_a_gather(bag):
    lut = torch.randn(12, 3, requires_grad=True)
    idx = torch.randint(0, 12, (5, 2))
    f = torch.compile(lambda w, i: bag(w, i).square().sum(), fullgraph=True, backend="aot_eager")
    y = f(lut, idx)
    y.backward()
    ref = lut.detach().clone().requires_grad_()
    r = ref[idx].sum(1).square().sum()
    r.backward()
    torch.testing.assert_close(y, r)
    torch.testing.assert_close(lut.grad, ref.grad)


def test_index_check_in_a_fresh_process(tmp_path):
    """The check holds in a process that loads the kernel from the cache, not only the one that built it."""
    import subprocess
    import sys

    code = (
        "import torch, neoflow\n"
        "op = neoflow.Op('O[b, d] += LUT[I[b, k], d]', inputs=['LUT', 'I'])\n"
        "lut = torch.randn(5, 2)\n"
        "print(op(lut, torch.tensor([[0, 4]])).shape)\n"
        "try:\n"
        "    op(lut, torch.tensor([[0, 5]]))\n"
        "except IndexError as e:\n"
        "    print('refused', e)\n"
    )
    for _ in range(2):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr
        assert "torch.Size([1, 2])" in out.stdout and "refused index tensor I holds 5" in out.stdout


# -- casts: integer outputs -----------------------------------------------------------------------------


@pytest.mark.parametrize("cast,itype", [("int32", torch.int32), ("int64", torch.int64)])
def test_cast_truncates_toward_zero_as_torch_does(dtype, cast, itype):
    op = neoflow.Op(f"O1[m, n] = {cast}(A[m, n] + 0.3)")
    a = torch.tensor([[1.5, -1.5, 2.9, -2.9], [0.1, -0.2, 7.0, -7.0], [1e6, -1e6, 0.0, -0.0]], dtype=dtype)
    got = op(a)
    assert got.dtype == itype
    assert torch.equal(got, (a + 0.3).to(itype))


def test_integer_output_has_no_gradient_and_float_output_no_rounding():
    op = neoflow.Op("Q[i] = int64(X[i] * 4.0)\nY[i] = X[i] * 2.0 + float(Q[i]) * 0.0", outputs=["Y", "Q"])
    x = torch.randn(7, dtype=torch.float64, requires_grad=True)
    y, q = op(x)
    assert q.dtype == torch.int64 and not q.requires_grad and y.requires_grad
    assert torch.equal(q, (x.detach() * 4).to(torch.int64))
    torch.testing.assert_close(y, x * 2.0)  # no integer rounding in the float output
    assert torch.autograd.gradcheck(lambda t: op(t)[0], (x,))


def test_float_cast_of_indices():
    op = neoflow.Op("Y[i, j] = float(i) * X[i, j] + float(j) / 2")
    torch.testing.assert_close(op(torch.ones(2, 3)), torch.tensor([[0.0, 0.5, 1.0], [1.0, 1.5, 2.0]]))


def test_cast_output_under_torch_compile():
    op = neoflow.Op("Q[i] = int32(X[i] * 10.0)\nY[i] = X[i] * X[i]", outputs=["Y", "Q"])
    x = torch.randn(16, requires_grad=True)
    f = torch.compile(lambda t: op(t), fullgraph=True, backend="aot_eager")
    y, q = f(x)
    assert q.dtype == torch.int32 and torch.equal(q, (x.detach() * 10).to(torch.int32))
    y.sum().backward()
    torch.testing.assert_close(x.grad, 2 * x.detach())


@pytest.mark.parametrize(
    "src,msg",
    [
        ("O[i] = int32(X[i]) * 2.0", "int32(...) may only be a statement's whole right-hand side"),
        ("O[i] += int64(X[i, j])", "an integer tensor is written with = only"),
        ("Y[Dst[e]] = X[e]", "needs +="),
    ],
)
def test_misplaced_casts_and_scatters_are_refused(src, msg):
    with pytest.raises(neoflow.Error, match=re.escape(msg)):
        neoflow.Op(src)


# -- the refused examples of issue 31 ------------------------------------------------------------------


def test_the_once_refused_examples_run():
    lut = torch.randn(12, 5, dtype=torch.float64, requires_grad=True)
    idx = torch.randint(0, 12, (4, 3))
    bag = neoflow.Op("O[i, j] += LUT[I[i, k], j]", inputs=["LUT", "I"])
    torch.testing.assert_close(bag(lut, idx), lut[idx].sum(1))
    assert torch.autograd.gradcheck(lambda w: bag(w, idx), (lut,))
    x = torch.randn(9, dtype=torch.float64, requires_grad=True)
    cos = neoflow.Op("O[i] = cos(I[i])")
    torch.testing.assert_close(cos(x), torch.cos(x))
    assert torch.autograd.gradcheck(cos, (x,))
    a = torch.randn(3, 4) * 3
    assert torch.equal(neoflow.Op("O1[m, n] = int32(A[m, n] + 0.3)")(a), (a + 0.3).to(torch.int32))
    tri = neoflow.Op("Y[i, j] += where(k <= i, L[i, k], 0.0) * B[k, j]", inputs=["L", "B"])
    low = torch.randn(5, 5, dtype=torch.float64, requires_grad=True)
    b = torch.randn(5, 3, dtype=torch.float64, requires_grad=True)
    torch.testing.assert_close(tri(low, b), torch.tril(low) @ b)
    assert torch.autograd.gradcheck(tri, (low, b))


# -- scatter: Y[Dst[e], f] += ... -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def gcn():
    return neoflow.Op("Y[Dst[e], f] += X[Src[e], f] * Norm[e]", inputs=["X", "Src", "Dst", "Norm"])


def test_scatter_against_index_add(gcn, dtype):
    x = torch.randn(6, 4, dtype=dtype, requires_grad=True)
    src, dst = torch.randint(0, 6, (25,)), torch.randint(0, 8, (25,), dtype=torch.int32)
    norm = torch.rand(25, dtype=dtype, requires_grad=True)
    y = gcn(x, src, dst, norm, out_shapes={"Y": (8, 4)})
    ref = x.new_zeros(8, 4).index_add(0, dst.long(), x[src] * norm[:, None])
    torch.testing.assert_close(y, ref, **tol(dtype))
    g = torch.randn_like(y)
    got = torch.autograd.grad(y, (x, norm), g)
    want = torch.autograd.grad(ref, (x, norm), g)
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b, **tol(dtype))


def test_scatter_gradcheck_and_gradients_are_gathers(gcn):
    x = torch.randn(5, 3, dtype=torch.float64, requires_grad=True)
    src, dst = torch.randint(0, 5, (12,)), torch.randint(0, 5, (12,))
    norm = torch.rand(12, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda a, n: gcn(a, src, dst, n, out_shapes={"Y": (5, 3)}), (x, norm))
    assert torch.autograd.gradgradcheck(lambda a, n: gcn(a, src, dst, n, out_shapes={"Y": (5, 3)}), (x, norm))
    text = gcn.explain_grad(x, src, dst, norm, sizes={"v_Dst": 5})
    assert "d_Norm[e] += d_Y[Dst[e], f] * X[Src[e], f]" in text, text


def test_scatter_out_shapes_errors(gcn):
    x, src, dst, norm = (
        torch.randn(5, 3),
        torch.zeros(4, dtype=torch.long),
        torch.zeros(4, dtype=torch.long),
        torch.ones(4),
    )
    with pytest.raises(neoflow.Error, match=r"size of dimension 0 of Y, which the op writes through Dst\[e\]"):
        gcn(x, src, dst, norm)
    with pytest.raises(ValueError, match="out_shapes names 'Z', which is neither an output of the op"):
        gcn(x, src, dst, norm, out_shapes={"Z": (5, 3)})
    with pytest.raises(ValueError, match="has 1 dimensions, but Y has 2"):
        gcn(x, src, dst, norm, out_shapes={"Y": (5,)})
    with pytest.raises(ValueError, match="gives Y size 4 in dimension 1, but the inputs give it 3"):
        gcn(x, src, dst, norm, out_shapes={"Y": (5, 4)})
    with pytest.raises(IndexError, match=r"index tensor Dst holds 5 at position \(2,\)"):
        gcn(x, src, torch.tensor([0, 1, 5, 2]), norm, out_shapes={"Y": (5, 3)})


def test_out_shapes_sizes_a_scattered_temporary():
    """A scatter into a temporary that a later statement reads: the error's advice (out_shapes) works."""
    op = neoflow.Op("H[Dst[e], f] += X[e, f]\nY[v, f] = tanh(H[v, f]) * 2.0", inputs=["X", "Dst"])
    x = torch.randn(6, 3, dtype=torch.float64, requires_grad=True)
    dst = torch.tensor([0, 2, 2, 1, 0, 3])
    with pytest.raises(neoflow.Error, match=r"out_shapes=\{'H'"):
        op(x, dst)
    y = op(x, dst, out_shapes={"H": (4, 3)})
    ref = torch.tanh(x.new_zeros(4, 3).index_add(0, dst, x)) * 2.0
    torch.testing.assert_close(y, ref)
    g = torch.randn_like(y)
    torch.testing.assert_close(torch.autograd.grad(y, x, g)[0], torch.autograd.grad(ref, x, g)[0])
    with pytest.raises(ValueError, match="has 0 dimensions, too few for H, which the op writes through an index"):
        op(x, dst, out_shapes={"H": ()})


def test_out_shapes_at_the_definition():
    op = neoflow.Op("C[L[i]] += X[i]", out_shapes={"C": (4,)}, inputs=["X", "L"])
    x = torch.randn(10, dtype=torch.float64)
    lab = torch.randint(0, 4, (10,))
    torch.testing.assert_close(op(x, lab), torch.zeros(4, dtype=torch.float64).index_add(0, lab, x))


def test_decorated_form_reads_and_scatters_through_index_tensors():
    @neoflow.op
    def seg_sum(X, Seg):
        i, f = neoflow.indices("i f")
        Y = neoflow.tensor("Y")
        Y[Seg[i], f] += X[i, f] * 2.0
        return Y

    x = torch.randn(7, 3, dtype=torch.float64)
    seg = torch.tensor([0, 0, 1, 2, 2, 2, 1])
    want = torch.zeros(3, 3, dtype=x.dtype).index_add(0, seg, 2 * x)
    torch.testing.assert_close(seg_sum(x, seg, out_shapes={"Y": (3, 3)}), want)


def test_gathers_from_several_threads(bag):
    """Calls of one op from several threads, each with its own tensors, agree with PyTorch (the index
    check and the launch share nothing between calls)."""
    import concurrent.futures

    lut = torch.randn(30, 4)

    def one(seed):
        g = torch.Generator().manual_seed(seed)
        idx = torch.randint(0, 30, (5, 3), generator=g)
        return torch.allclose(bag(lut, idx), lut[idx].sum(1), atol=1e-5)

    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        assert all(pool.map(one, range(32)))


# -- generated gathers ------------------------------------------------------------------------------------


@settings(max_examples=25, deadline=None)
@given(
    rows=st.integers(1, 9),
    width=st.integers(1, 5),
    bags=st.integers(1, 6),
    per_bag=st.integers(1, 4),
    i32=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_generated_embedding_bags_match_pytorch(bag, rows, width, bags, per_bag, i32, seed):
    g = torch.Generator().manual_seed(seed)
    lut = torch.randn(rows, width, dtype=torch.float64, generator=g, requires_grad=True)
    idx = torch.randint(0, rows, (bags, per_bag), generator=g).to(torch.int32 if i32 else torch.int64)
    out = bag(lut, idx)
    ref = lut[idx.long()].sum(1)
    torch.testing.assert_close(out, ref)
    w = torch.randn(bags, width, dtype=torch.float64, generator=g)
    torch.testing.assert_close(torch.autograd.grad(out, lut, w)[0], torch.autograd.grad(ref, lut, w)[0])


def test_deterministic_setting():
    """configure(deterministic=) checks its type, drops the kernels built so far when it changes, and leaves
    C kernels' results as they were (they are deterministic either way)."""
    bag = neoflow.Op("O[b, d] += LUT[I[b, k], d]", inputs=["LUT", "I"])
    lut, idx = torch.randn(20, 4), torch.randint(0, 20, (6, 3))
    before = bag(lut, idx)
    with pytest.raises(TypeError, match="deterministic must be True or False"):
        neoflow.configure(deterministic="yes")
    try:
        assert neoflow.configure(deterministic=True)["deterministic"] is True
        assert not bag._kernels  # rebuilt on the next call
        assert torch.equal(bag(lut, idx), before)
    finally:
        neoflow.configure(deterministic=False)


def test_decorated_casts():
    @neoflow.op
    def quantize(X):
        i = neoflow.indices("i")
        Q, Y = neoflow.tensor("Q"), neoflow.tensor("Y")
        Q[i] = neoflow.int32(X[i] * 8.0)
        Y[i] = neoflow.to_float(i) + X[i]
        return Q, Y

    x = torch.randn(5, dtype=torch.float64)
    q, y = quantize(x)
    assert q.dtype == torch.int32 and torch.equal(q, (x * 8).to(torch.int32))
    torch.testing.assert_close(y, torch.arange(5, dtype=torch.float64) + x)


def test_out_shapes_through_neoflow_op_text_and_decorated():
    seg = torch.tensor([2, 0, 2, 1])
    x = torch.randn(4, 3, dtype=torch.float64)
    want = torch.zeros(3, 3, dtype=x.dtype).index_add(0, seg, x)
    text = neoflow.op("Y[S[i], f] += X[i, f]", inputs=["X", "S"], out_shapes={"Y": (3, 3)})
    torch.testing.assert_close(text(x, seg), want)

    @neoflow.op(out_shapes={"Y": (3, 3)})
    def scatter(X, S):
        i, f = neoflow.indices("i f")
        Y = neoflow.tensor("Y")
        Y[S[i], f] += X[i, f]
        return Y

    torch.testing.assert_close(scatter(x, seg), want)
    with pytest.raises(ValueError, match="gives Y size 4 in dimension 1"):
        neoflow.op("Y[S[i], f] += X[i, f]", inputs=["X", "S"], out_shapes={"Y": (3, 4)})(x, seg)


def test_a_float32_index_beside_float64_values_is_told_it_must_be_an_integer():
    """The index's dtype is the problem, not that the floating-point inputs differ."""
    op = neoflow.Op("Y[b, d] = E[I[b], d] * 2.0", inputs=["E", "I"])
    with pytest.raises(
        neoflow.Error, match="I is read as an index, so it must be an int32 or int64 tensor, got float32"
    ):
        op(torch.randn(4, 3, dtype=torch.float64), torch.zeros(2, dtype=torch.float32))


# -- regressions from fuzzing the index-tensor features -----------------------------------------------------------


@pytest.mark.parametrize("reduce", ["+=", "max=", "min="])
def test_nested_gather_under_a_reduction(reduce):
    """O[d] += E[I[J[k]], d]: the row-gather prefetch looks ahead along k, not along the value J[k]."""
    op = neoflow.Op(f"O[d] {reduce} E[I[J[k]], d]", inputs=["E", "I", "J"])
    e = torch.randn(4, 8, dtype=torch.float64)
    i, j = torch.tensor([3, 0, 2, 1]), torch.tensor([0, 3, 3, 2, 1, 0])
    rows = e[i[j]]
    want = {"+=": rows.sum(0), "max=": rows.amax(0), "min=": rows.amin(0)}[reduce]
    torch.testing.assert_close(op(e, i, j), want)


def test_nested_gather_with_a_second_index_under_a_reduction():
    op = neoflow.Op("O[b, d] += E[I[J[b], k], d]", inputs=["E", "I", "J"])
    e = torch.randn(5, 16, dtype=torch.float64, requires_grad=True)
    i, j = torch.randint(0, 5, (3, 4)), torch.tensor([2, 0, 1, 1])
    ref = e[i[j]].sum(1)
    got = op(e, i, j)
    torch.testing.assert_close(got, ref)
    g = torch.randn_like(got)
    torch.testing.assert_close(torch.autograd.grad(got, e, g)[0], torch.autograd.grad(ref, e, g)[0])


def test_gather_at_a_guarded_shifted_position_has_a_gradient():
    """O[b] = where(b > 0, E[I[b - 1]], 0.0), the previous token's row: the guard stays before the index read."""
    op = neoflow.Op("O[b, d] = where(b > 0, E[I[b - 1], d], 0.0)", inputs=["E", "I"])
    e = torch.randn(7, 3, dtype=torch.float64, requires_grad=True)
    i = torch.tensor([4, 0, 6, 6, 2])
    got = op(e, i)
    ref = torch.cat([e.new_zeros(1, 3), e[i]])  # b runs to 5: b - 1 indexes all of I
    torch.testing.assert_close(got, ref)
    g = torch.randn_like(got)
    torch.testing.assert_close(torch.autograd.grad(got, e, g)[0], torch.autograd.grad(ref, e, g)[0])
    assert torch.autograd.gradcheck(lambda e: op(e, i), (e,))
