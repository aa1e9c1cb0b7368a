"""A two-layer graph convolutional network whose aggregation is one neoflow op, a scatter over the edges:

    Y[Dst[e], f] += X[Src[e], f] * Norm[e]

(each edge adds its source's features, scaled by 1/sqrt(deg(src) deg(dst)), to its destination), then a linear
layer. Trained for a few steps on a small random graph next to the same model aggregating with index_add_, from
the same weights: the losses must agree at every step.

    python examples/gcn.py [--steps 20]
"""

import argparse

import neoflow
import torch

aggregate = neoflow.op(
    "Y[Dst[e], f] += X[Src[e], f] * Norm[e]", name="gcn_aggregate", inputs=["X", "Src", "Dst", "Norm"]
)


def random_graph(nodes: int, edges: int, seed: int = 0):
    """Random directed edges plus a self loop per node, and the symmetric normalization of each edge."""
    g = torch.Generator().manual_seed(seed)
    src = torch.cat([torch.randint(0, nodes, (edges,), generator=g), torch.arange(nodes)])
    dst = torch.cat([torch.randint(0, nodes, (edges,), generator=g), torch.arange(nodes)])
    deg_in = torch.zeros(nodes).index_add_(0, dst, torch.ones(len(dst)))
    deg_out = torch.zeros(nodes).index_add_(0, src, torch.ones(len(src)))
    return src, dst, (deg_out[src] * deg_in[dst]).rsqrt()


class GCN(torch.nn.Module):
    def __init__(self, feats: int, hidden: int, classes: int, use_neoflow: bool):
        super().__init__()
        self.lin1 = torch.nn.Linear(feats, hidden)
        self.lin2 = torch.nn.Linear(hidden, classes)
        self.use_neoflow = use_neoflow

    def propagate(self, x, src, dst, norm):
        if self.use_neoflow:
            return aggregate(x, src, dst, norm, out_shapes={"Y": tuple(x.shape)})
        return torch.zeros_like(x).index_add_(0, dst, x[src] * norm[:, None])

    def forward(self, x, src, dst, norm):
        h = torch.relu(self.propagate(self.lin1(x), src, dst, norm))
        return self.propagate(self.lin2(h), src, dst, norm)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=20)
    args = ap.parse_args()
    torch.manual_seed(0)
    nodes, feats, classes = 200, 16, 4
    src, dst, norm = random_graph(nodes, 800)
    x = torch.randn(nodes, feats)
    labels = torch.randint(0, classes, (nodes,))
    models = [GCN(feats, 32, classes, use_neoflow=flag) for flag in (True, False)]
    models[1].load_state_dict(models[0].state_dict())
    opts = [torch.optim.Adam(m.parameters(), lr=0.01) for m in models]
    for step in range(args.steps):
        losses = []
        for model, opt in zip(models, opts):
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(x, src, dst, norm), labels)
            loss.backward()
            opt.step()
            losses.append(loss.item())
        assert abs(losses[0] - losses[1]) <= 1e-4 * (1 + abs(losses[1])), f"step {step}: losses {losses}"
        if step % 5 == 0 or step == args.steps - 1:
            print(f"step {step}: loss neoflow {losses[0]:.5f}, index_add_ {losses[1]:.5f}")
    print("OK: the neoflow GCN trains as the index_add_ one does")


if __name__ == "__main__":
    main()
