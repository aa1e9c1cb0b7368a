"""The decorated form builds the same IR as the text form."""

import neoflow
import pytest
import torch


def test_decorated_conv_equals_text():
    text = neoflow.op("Y[n,k,p,q] += X[n,c,p*S+r,q*S+s] * W[k,c,r,s]", S=2)

    @neoflow.op(S=2)
    def conv(X, W, *, S):
        n, k, p, q, c, r, s = neoflow.indices("n k p q c r s")
        Y = neoflow.tensor("Y")
        Y[n, k, p, q] += X[n, c, p * S + r, q * S + s] * W[k, c, r, s]
        return Y

    assert conv.hash == text.hash
    assert str(conv) == str(text)
    x, w = torch.randn(1, 2, 9, 9, dtype=torch.float64), torch.randn(3, 2, 3, 3, dtype=torch.float64)
    torch.testing.assert_close(conv(x, w), torch.nn.functional.conv2d(x, w, stride=2))


def test_decorated_softmax_with_reductions():
    @neoflow.op
    def softmax(X):
        b, j = neoflow.indices("b j")
        M, E, S, Y = (neoflow.tensor(n) for n in "MESY")
        M[b] = neoflow.reduce_max(X[b, j])
        E[b, j] = neoflow.exp(X[b, j] - M[b])
        S[b] += E[b, j]
        Y[b, j] = E[b, j] / S[b]
        return Y

    text = neoflow.op("M[b] max= X[b,j]\nE[b,j] = exp(X[b,j] - M[b])\nS[b] += E[b,j]\nY[b,j] = E[b,j] / S[b]")
    assert softmax.hash == text.hash
    x = torch.randn(3, 5, dtype=torch.float64)
    torch.testing.assert_close(softmax(x), torch.softmax(x, -1))


def test_decorated_where_and_index_math():
    @neoflow.op(N=3)
    def concat(A, B, *, N):
        i, j = neoflow.indices("i j")
        Y = neoflow.tensor("Y")
        Y[i, j] = neoflow.where(i < N, A[i, j], B[i - N, j])
        return Y

    a, b = torch.randn(3, 4, dtype=torch.float64), torch.randn(2, 4, dtype=torch.float64)
    torch.testing.assert_close(concat(a, b, sizes={"i": 5}), torch.cat([a, b]))


def test_decorated_returns_outputs_in_its_order():
    @neoflow.op
    def stats(X):
        i, j = neoflow.indices("i j")
        S, M = neoflow.tensor("S"), neoflow.tensor("M")
        S[i] += X[i, j]
        M[i] = neoflow.reduce_max(X[i, j])
        return M, S

    x = torch.randn(3, 4, dtype=torch.float64)
    m, s = stats(x)
    torch.testing.assert_close(m, x.amax(1))
    torch.testing.assert_close(s, x.sum(1))


def test_decorated_errors():
    with pytest.raises(TypeError, match="truth value"):

        @neoflow.op
        def bad(X):
            i = neoflow.indices("i")
            Y = neoflow.tensor("Y")
            Y[i] = X[i] if X[i] > 0 else 0.0
            return Y

    with pytest.raises(TypeError, match="needs a value"):

        @neoflow.op
        def missing(X, *, S):
            i = neoflow.indices("i")
            Y = neoflow.tensor("Y")
            Y[i] = X[i * S]
            return Y

    with pytest.raises(TypeError, match="on values use /"):

        @neoflow.op
        def floordiv(X):
            i = neoflow.indices("i")
            Y = neoflow.tensor("Y")
            Y[i] = X[i] // 2.0
            return Y


def test_print_and_c_source():
    op = neoflow.op("C[i,j]+=A[i,k]*B[k,j]")
    assert str(op).strip() == "C[i, j] += A[i, k] * B[k, j]"
    src = op.c_source(torch.randn(4, 5), torch.randn(5, 6))
    assert "float" in src and "omp" in src


def test_decorated_long_sums_need_no_deep_nesting():
    @neoflow.op
    def many(X):
        i = neoflow.indices("i")
        Y = neoflow.tensor("Y")
        total = X[i]
        for _ in range(299):
            total = total + X[i]
        Y[i] = total
        return Y

    x = torch.randn(4, dtype=torch.float64)
    torch.testing.assert_close(many(x), x * 300)


def test_decorated_precedence_matches_python():
    @neoflow.op
    def prec(A, B):
        i = neoflow.indices("i")
        Y = neoflow.tensor("Y")
        Y[i] = A[i] - (B[i] - A[i]) * 2.0 - -B[i] / (A[i] + 3.0)
        return Y

    a, b = torch.rand(5, dtype=torch.float64), torch.rand(5, dtype=torch.float64)
    torch.testing.assert_close(prec(a, b), a - (b - a) * 2.0 - -b / (a + 3.0))
