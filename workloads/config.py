"""Shapes and hyperparameters for every workload, in one place.

``SMALL`` runs in seconds on a 2-core CPU (tests); ``BENCH`` is paper-like
(the NeoFlow paper's RNN experiments: batch 1, 16 and 64, hidden 256 to 1024).
Both are plain dicts keyed by workload name, so adding a workload is adding a
key. The CNN workloads keep their shapes as dicts (CAPSNET, SHUFFLENET) with
a "small" and a "bench" entry.
"""

from dataclasses import dataclass, replace

BENCH_BATCHES = (1, 16, 64)


@dataclass(frozen=True)
class RNNConfig:
    batch: int
    seq_len: int
    input_size: int
    hidden: int
    context: int = 0  # SC-RNN only: size of the slow context state s
    alpha: float = 0.95  # SC-RNN only: decay of the context state
    lr: float = 0.01

    def with_batch(self, batch: int) -> "RNNConfig":
        return replace(self, batch=batch)


SMALL = {
    "milstm": RNNConfig(batch=4, seq_len=4, input_size=5, hidden=6),
    "scrnn": RNNConfig(batch=4, seq_len=4, input_size=5, hidden=6, context=3),
    "sublstm": RNNConfig(batch=4, seq_len=4, input_size=5, hidden=6),
    "lltm": RNNConfig(batch=4, seq_len=4, input_size=5, hidden=6),
    "capsnet": None,  # set below from CAPSNET
    "shufflenet": None,  # set below from SHUFFLENET
}

BENCH = {
    "milstm": RNNConfig(batch=64, seq_len=16, input_size=256, hidden=1024),
    "scrnn": RNNConfig(batch=64, seq_len=16, input_size=256, hidden=512, context=128),
    "sublstm": RNNConfig(batch=64, seq_len=16, input_size=256, hidden=512),
    "lltm": RNNConfig(batch=64, seq_len=16, input_size=256, hidden=256),
    "capsnet": None,  # set below from CAPSNET
    "shufflenet": None,  # set below from SHUFFLENET
}

RNN_WORKLOADS = ("milstm", "scrnn", "sublstm", "lltm")

CAPSNET = {
    # 12x12 -> stem 3x3 -> 10x10 -> caps 3x3/2 -> 4x4 -> caps 2x2/1 -> 3x3 votes
    "small": dict(
        batch=2,
        in_channels=1,
        hw=12,
        stem_kernel=3,
        stem_stride=1,
        types0=2,
        types1=3,
        kernel1=3,
        stride1=2,
        kernel2=2,
        stride2=1,
        classes=4,
        iters=3,
    ),
    # MNIST-like: 28x28 -> stem 5x5/2 -> 12x12 -> caps 3x3/2 (8->16 types) -> 5x5 -> caps 3x3/1 -> 3x3 votes
    "bench": dict(
        batch=32,
        in_channels=1,
        hw=28,
        stem_kernel=5,
        stem_stride=2,
        types0=8,
        types1=16,
        kernel1=3,
        stride1=2,
        kernel2=3,
        stride2=1,
        classes=10,
        iters=3,
    ),
}

SHUFFLENET = {
    "small": dict(batch=2, channels=8, bottleneck=4, groups=2, hw=6, classes=3),
    # ShuffleNet stage-2 like unit (g=3): 240 channels, 60 bottleneck, 28x28
    "bench": dict(batch=32, channels=240, bottleneck=60, groups=3, hw=28, classes=10),
}

for _name, _cfg in (("capsnet", CAPSNET), ("shufflenet", SHUFFLENET)):
    SMALL[_name], BENCH[_name] = _cfg["small"], _cfg["bench"]
