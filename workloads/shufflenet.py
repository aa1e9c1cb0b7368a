"""A ShuffleNet unit (Zhang et al., stride 1) with a small classifier head.

    x -> 1x1 group conv -> BN -> ReLU -> channel shuffle -> 3x3 depthwise conv (pad 1)
      -> BN -> 1x1 group conv -> BN -> (+ x) -> ReLU -> global avg pool -> linear

``ShuffleUnitTorch`` uses ``torch.nn.functional`` throughout;
``ShuffleUnitNeoflow`` computes both group convs, the channel shuffle and the
depthwise conv with neoflow ops (BatchNorm, ReLU, pooling and the head stay
plain torch). Both have the same parameters and buffers, so
``load_state_dict`` copies weights from one to the other.
"""

import neoflow
import torch
import torch.nn.functional as F

from . import config

CONFIG = config.SHUFFLENET  # shapes live with every other workload's, in workloads/config.py

GROUP_CONV_1X1 = "Y[n,o,h,w] += X[n,(o/KO)*CG+c,h,w] * Wt[o,c,u,v]"
CHANNEL_SHUFFLE = "Y[n,c,h,w] = X[n, (c%G)*K + c/G, h, w]"
DEPTHWISE_3X3_PAD1 = (
    "Y[n,c,p,q] += where(p+r >= 1 && p+r <= H && q+s >= 1 && q+s <= W, X[n,c,p+r-1,q+s-1], 0) * K[c,r,s]"
)


def channel_shuffle_torch(x, groups):
    n, c, h, w = x.shape
    return x.view(n, groups, c // groups, h, w).transpose(1, 2).reshape(n, c, h, w)


class _ShuffleUnit(torch.nn.Module):
    def __init__(self, cfg, dtype=torch.float32, seed=0):
        super().__init__()
        self.cfg = dict(cfg)
        c, m, g = cfg["channels"], cfg["bottleneck"], cfg["groups"]
        assert c % g == 0 and m % g == 0
        gen = torch.Generator().manual_seed(seed)

        def init(*shape, fan):
            return torch.nn.Parameter(torch.randn(*shape, dtype=dtype, generator=gen) / fan**0.5)

        self.gconv1 = init(m, c // g, 1, 1, fan=c // g)  # nn.Conv2d(c, m, 1, groups=g) weight
        self.bn1 = torch.nn.BatchNorm2d(m, dtype=dtype)
        self.dwconv = init(m, 1, 3, 3, fan=9)  # nn.Conv2d(m, m, 3, padding=1, groups=m) weight
        self.bn2 = torch.nn.BatchNorm2d(m, dtype=dtype)
        self.gconv2 = init(c, m // g, 1, 1, fan=m // g)
        self.bn3 = torch.nn.BatchNorm2d(c, dtype=dtype)
        self.head = torch.nn.Linear(c, cfg["classes"], dtype=dtype)
        with torch.no_grad():
            self.head.weight.copy_(torch.randn(self.head.weight.shape, dtype=dtype, generator=gen) / c**0.5)
            self.head.bias.zero_()

    def unit(self, x):
        """The ShuffleNet unit: [n, c, h, w] -> [n, c, h, w]."""
        y = torch.relu(self.bn1(self.group_conv(x, self.gconv1)))
        y = self.shuffle(y)
        y = self.bn2(self.depthwise(y, self.dwconv))
        y = self.bn3(self.group_conv(y, self.gconv2))
        return torch.relu(x + y)

    def forward(self, x):
        """x [n, c, h, w] -> logits [n, classes]."""
        return self.head(self.unit(x).mean((2, 3)))

    def loss(self, x, labels):
        logits = self.forward(x)
        return F.cross_entropy(logits, labels), logits


class ShuffleUnitTorch(_ShuffleUnit):
    """Plain-PyTorch baseline."""

    def group_conv(self, x, w):
        return F.conv2d(x, w, groups=self.cfg["groups"])

    def shuffle(self, x):
        return channel_shuffle_torch(x, self.cfg["groups"])

    def depthwise(self, x, w):
        return F.conv2d(x, w, padding=1, groups=x.shape[1])


class ShuffleUnitNeoflow(_ShuffleUnit):
    """Group convs, channel shuffle and depthwise conv as neoflow ops."""

    def __init__(self, cfg, dtype=torch.float32, seed=0):
        super().__init__(cfg, dtype, seed)
        c, m, g, hw = cfg["channels"], cfg["bottleneck"], cfg["groups"], cfg["hw"]
        self.gconv1_op = neoflow.op(GROUP_CONV_1X1, KO=m // g, CG=c // g)
        self.gconv2_op = neoflow.op(GROUP_CONV_1X1, KO=c // g, CG=m // g)
        self.shuffle_op = neoflow.op(CHANNEL_SHUFFLE, G=g, K=m // g)
        self.dw_op = neoflow.op(DEPTHWISE_3X3_PAD1, H=hw, W=hw, sizes={"p": hw, "q": hw})

    def group_conv(self, x, w):
        return (self.gconv1_op if w is self.gconv1 else self.gconv2_op)(x, w)

    def shuffle(self, x):
        return self.shuffle_op(x)

    def depthwise(self, x, w):
        return self.dw_op(x, w.squeeze(1))


def synthetic_data(cfg, dtype=torch.float32, seed=0):
    """Seeded inputs [batch, channels, hw, hw] and labels [batch] (class k shifts channel group k)."""
    g = torch.Generator().manual_seed(seed)
    n, c, hw, k = cfg["batch"], cfg["channels"], cfg["hw"], cfg["classes"]
    labels = torch.randint(0, k, (n,), generator=g)
    x = torch.randn(n, c, hw, hw, dtype=dtype, generator=g)
    per = max(c // k, 1)
    for i, y in enumerate(labels.tolist()):
        x[i, y * per : (y + 1) * per] += 1.0
    return x, labels


def op_cases(cfg, dtype=torch.float32, seed=0, device="cpu"):
    """The neoflow ops this workload uses, for per-operator benchmarks.

    Returns ``[(op_name, neoflow_fn, torch_fn, inputs, params)]``: both
    functions take ``inputs`` (activations and weights on ``device``,
    requiring grad) and return the same output.
    """
    g = torch.Generator().manual_seed(seed)
    model = ShuffleUnitNeoflow(cfg, dtype=dtype, seed=seed)
    n, c, m, groups, hw = cfg["batch"], cfg["channels"], cfg["bottleneck"], cfg["groups"], cfg["hw"]

    def leaves(*ts):
        return tuple(t.detach().to(device).clone().requires_grad_(True) for t in ts)

    x = torch.randn(n, c, hw, hw, dtype=dtype, generator=g)
    y = torch.randn(n, m, hw, hw, dtype=dtype, generator=g)
    return [
        (
            "group_conv1",
            model.gconv1_op,
            lambda x, w: F.conv2d(x, w, groups=groups),
            leaves(x, model.gconv1),
            [],
        ),
        ("channel_shuffle", model.shuffle_op, lambda x: channel_shuffle_torch(x, groups), leaves(y), []),
        (
            "depthwise3x3",
            lambda x, w: model.dw_op(x, w.squeeze(1)),
            lambda x, w: F.conv2d(x, w, padding=1, groups=m),
            leaves(y, model.dwconv),
            [],
        ),
        (
            "group_conv2",
            model.gconv2_op,
            lambda x, w: F.conv2d(x, w, groups=groups),
            leaves(y, model.gconv2),
            [],
        ),
    ]
