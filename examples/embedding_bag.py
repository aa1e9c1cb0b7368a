"""An embedding bag as one neoflow op: each bag sums (or averages) the table rows its int64 indices pick, a
gather through an index tensor, whose gradient is a scatter-add into the table. Checked against
torch.nn.functional.embedding_bag, forward and backward, and with gradcheck; an index out of range is refused
before the kernel runs.

    python examples/embedding_bag.py
"""

import neoflow
import torch
import torch.nn.functional as F

bag_sum = neoflow.op("O[b, d] += LUT[I[b, k], d]", name="embedding_bag_sum", inputs=["LUT", "I"])
bag_mean = neoflow.op("O[b, d] += LUT[I[b, k], d] / K", name="embedding_bag_mean", inputs=["LUT", "I"], K=8)


def main() -> None:
    lut = torch.randn(1000, 64, requires_grad=True)
    idx = torch.randint(0, 1000, (32, 8))
    for op, mode in ((bag_sum, "sum"), (bag_mean, "mean")):
        y = op(lut, idx)
        want = F.embedding_bag(idx, lut, mode=mode)
        err = (y - want).abs().max().item()
        print(f"{mode}: output {tuple(y.shape)}; max |neoflow - pytorch| = {err:.2e}")
        assert torch.allclose(y, want, rtol=1e-4, atol=1e-5), f"{mode}: forward mismatch"
        g = torch.randn_like(y)
        (got,) = torch.autograd.grad(y, lut, g)
        (ref,) = torch.autograd.grad(want, lut, g)
        assert torch.allclose(got, ref, rtol=1e-4, atol=1e-5), f"{mode}: gradient mismatch"
    lut64 = torch.randn(20, 3, dtype=torch.float64, requires_grad=True)
    small = torch.randint(0, 20, (4, 8))
    assert torch.autograd.gradcheck(lambda w: bag_mean(w, small), (lut64,))
    try:
        bag_sum(lut, torch.tensor([[0, 1000]]))
        raise AssertionError("an index out of range was not refused")
    except IndexError as e:
        print(f"refused: {e}")
    print("OK: forward, gradient and gradcheck match PyTorch")


if __name__ == "__main__":
    main()
