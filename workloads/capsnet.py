"""CapsuleNet: a conv stem, two capsule-convolution layers and dynamic routing.

Capsules carry 4x4 pose matrices. A capsule convolution (the NeoFlow paper's
capsule conv) maps capsules ``A[b,c,h,w,4,4]`` with weights ``B[k,c,r,s,4,4]``
to ``C[b,k,p,q,i,j] += A[b,c,p*S+r,q*S+s,i,t] * B[k,c,r,s,t,j]``.

The network:

1. stem: ``Conv2d(in, types0*16)`` + ReLU, reshaped into primary capsules,
   squashed;
2. capsule conv 1 (``types0 -> types1``), squashed;
3. capsule conv 2 (``types1 -> classes``) produces votes: every output
   position ``(p,q)`` is an input capsule that votes a pose for every class;
4. dynamic routing (Sabour et al., 3 iterations) over the positions gives one
   class capsule per class; its length is the class score (margin loss).

``CapsNetTorch`` computes the capsule convs with unfold + einsum,
``CapsNetNeoflow`` with neoflow ops; both have the same parameters, so
``load_state_dict`` copies weights from one to the other. Routing is plain
torch in both.
"""

import neoflow
import torch

from . import config

CONFIG = config.CAPSNET  # shapes live with every other workload's, in workloads/config.py

CAPSULE_CONV = "C[b,k,p,q,i,j] += A[b,c,p*S+r,q*S+s,i,t] * B[k,c,r,s,t,j]"


def capsule_conv_torch(a, w, stride):
    """Capsule conv with unfold + einsum: a [b,c,h,w,4,4], w [k,c,r,s,4,4] -> [b,k,p,q,4,4]."""
    r, s = w.shape[2], w.shape[3]
    patches = a.unfold(2, r, stride).unfold(3, s, stride)  # b c p q i t r s
    return torch.einsum("bcpqitrs,kcrstj->bkpqij", patches, w)


def squash(s, dim=-1, eps=1e-9):
    """Sabour et al.'s squash: keeps the direction, maps the length to [0, 1)."""
    n2 = (s * s).sum(dim, keepdim=True)
    return s * (n2 / (1.0 + n2)) / torch.sqrt(n2 + eps)


def squash_poses(x):
    """Squash each 4x4 pose matrix as a 16-vector; x [..., 4, 4]."""
    shape = x.shape
    return squash(x.reshape(*shape[:-2], 16)).reshape(shape)


def dynamic_routing(votes, iters=3):
    """votes [b, n_in, n_out, d] -> class capsules [b, n_out, d].

    Logits start at zero; coupling coefficients are a softmax over the output
    capsules; after each iteration the logits grow by the agreement
    (dot product) between each vote and the output capsule.
    """
    logits = torch.zeros(votes.shape[:3], dtype=votes.dtype, device=votes.device)
    for it in range(iters):
        coupling = torch.softmax(logits, dim=2)  # b, n_in, n_out
        out = squash((coupling.unsqueeze(-1) * votes).sum(1))  # b, n_out, d
        if it < iters - 1:
            logits = logits + (votes * out.unsqueeze(1)).sum(-1)
    return out


def margin_loss(lengths, labels, m_pos=0.9, m_neg=0.1, lam=0.5):
    """Sabour et al.'s margin loss on class-capsule lengths [b, classes]."""
    t = torch.nn.functional.one_hot(labels, lengths.shape[1]).to(lengths.dtype)
    loss = t * torch.relu(m_pos - lengths) ** 2 + lam * (1 - t) * torch.relu(lengths - m_neg) ** 2
    return loss.sum(1).mean()


class _CapsNet(torch.nn.Module):
    def __init__(self, cfg, dtype=torch.float32, seed=0):
        super().__init__()
        self.cfg = dict(cfg)
        g = torch.Generator().manual_seed(seed)
        c0, c1, k = cfg["types0"], cfg["types1"], cfg["classes"]
        self.stem = torch.nn.Conv2d(
            cfg["in_channels"], c0 * 16, cfg["stem_kernel"], stride=cfg["stem_stride"], dtype=dtype
        )
        with torch.no_grad():
            fan = cfg["in_channels"] * cfg["stem_kernel"] ** 2
            self.stem.weight.copy_(torch.randn(self.stem.weight.shape, dtype=dtype, generator=g) / fan**0.5)
            self.stem.bias.zero_()
        k1, k2 = cfg["kernel1"], cfg["kernel2"]
        w1 = torch.randn(c1, c0, k1, k1, 4, 4, dtype=dtype, generator=g) / (c0 * k1 * k1 * 4) ** 0.5
        w2 = torch.randn(k, c1, k2, k2, 4, 4, dtype=dtype, generator=g) / (c1 * k2 * k2 * 4) ** 0.5
        self.w1 = torch.nn.Parameter(w1)  # capsule conv 1: [types1, types0, k1, k1, 4, 4]
        self.w2 = torch.nn.Parameter(w2)  # capsule conv 2 (votes): [classes, types1, k2, k2, 4, 4]

    def capsule_conv1(self, a):
        raise NotImplementedError

    def capsule_conv2(self, a):
        raise NotImplementedError

    def forward(self, x):
        """x [b, in, hw, hw] -> class capsules [b, classes, 16]."""
        b = x.shape[0]
        c0 = self.cfg["types0"]
        h = torch.relu(self.stem(x))  # b, c0*16, H, W
        hh, ww = h.shape[2], h.shape[3]
        a0 = squash_poses(h.reshape(b, c0, 4, 4, hh, ww).permute(0, 1, 4, 5, 2, 3).contiguous())
        a1 = squash_poses(self.capsule_conv1(a0))  # b, c1, P1, Q1, 4, 4
        v = self.capsule_conv2(a1)  # b, classes, P2, Q2, 4, 4
        k = v.shape[1]
        votes = v.reshape(b, k, -1, 16).transpose(1, 2)  # b, positions, classes, 16
        return dynamic_routing(votes, self.cfg["iters"])

    def loss(self, x, labels):
        caps = self.forward(x)
        lengths = torch.sqrt((caps * caps).sum(-1) + 1e-9)
        return margin_loss(lengths, labels), caps


class CapsNetTorch(_CapsNet):
    """Plain-PyTorch baseline: capsule convs via unfold + einsum."""

    def capsule_conv1(self, a):
        return capsule_conv_torch(a, self.w1, self.cfg["stride1"])

    def capsule_conv2(self, a):
        return capsule_conv_torch(a, self.w2, self.cfg["stride2"])


class CapsNetNeoflow(_CapsNet):
    """The same network with both capsule convs as neoflow ops."""

    def __init__(self, cfg, dtype=torch.float32, seed=0):
        super().__init__(cfg, dtype, seed)
        self.caps1 = neoflow.op(CAPSULE_CONV, S=cfg["stride1"])
        self.caps2 = neoflow.op(CAPSULE_CONV, S=cfg["stride2"])

    def capsule_conv1(self, a):
        return self.caps1(a, self.w1)

    def capsule_conv2(self, a):
        return self.caps2(a, self.w2)


def synthetic_data(cfg, dtype=torch.float32, seed=0):
    """Seeded images [batch, in, hw, hw] and labels [batch] (class k brightens band k)."""
    g = torch.Generator().manual_seed(seed)
    n, hw, k = cfg["batch"], cfg["hw"], cfg["classes"]
    labels = torch.randint(0, k, (n,), generator=g)
    x = torch.rand(n, cfg["in_channels"], hw, hw, dtype=dtype, generator=g) * 0.3
    band = max(hw // k, 1)
    for i, y in enumerate(labels.tolist()):
        x[i, :, y * band : (y + 1) * band] += 0.7
    return x, labels


def op_cases(cfg, dtype=torch.float32, seed=0, device="cpu"):
    """The neoflow ops this workload uses, for per-operator benchmarks.

    Returns ``[(op_name, neoflow_fn, torch_fn, inputs, params)]``: both
    functions take ``inputs`` (capsules and weights on ``device``, requiring
    grad) and return the capsule conv's output.
    """
    g = torch.Generator().manual_seed(seed)
    model = CapsNetNeoflow(cfg, dtype=dtype, seed=seed)
    h0 = (cfg["hw"] - cfg["stem_kernel"]) // cfg["stem_stride"] + 1
    h1 = (h0 - cfg["kernel1"]) // cfg["stride1"] + 1
    cases = []
    for i, (op, w, hw, stride) in enumerate(
        ((model.caps1, model.w1, h0, cfg["stride1"]), (model.caps2, model.w2, h1, cfg["stride2"])), 1
    ):
        a = torch.randn(cfg["batch"], w.shape[1], hw, hw, 4, 4, dtype=dtype, generator=g) * 0.3
        inputs = (a.to(device).requires_grad_(True), w.detach().to(device).clone().requires_grad_(True))
        cases.append((f"capsule_conv{i}", op, lambda a, w, s=stride: capsule_conv_torch(a, w, s), inputs, []))
    return cases
