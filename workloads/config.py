"""Shapes and hyperparameters for every workload, in one place.

``SMALL`` runs in seconds on a 2-core CPU (tests); ``BENCH`` is paper-like
(the NeoFlow paper's RNN experiments: batch 1, 16 and 64, hidden 256 to 1024).
Both are plain dicts keyed by workload name, so adding a workload is adding a
key. ``capsnet`` and ``shufflenet`` are placeholders filled by their own
modules (workloads/capsnet.py, workloads/shufflenet.py).
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
    "capsnet": None,  # placeholder: filled from workloads/capsnet.py
    "shufflenet": None,  # placeholder: filled from workloads/shufflenet.py
}

BENCH = {
    "milstm": RNNConfig(batch=64, seq_len=16, input_size=256, hidden=1024),
    "scrnn": RNNConfig(batch=64, seq_len=16, input_size=256, hidden=512, context=128),
    "sublstm": RNNConfig(batch=64, seq_len=16, input_size=256, hidden=512),
    "lltm": RNNConfig(batch=64, seq_len=16, input_size=256, hidden=256),
    "capsnet": None,  # placeholder: filled from workloads/capsnet.py
    "shufflenet": None,  # placeholder: filled from workloads/shufflenet.py
}

RNN_WORKLOADS = ("milstm", "scrnn", "sublstm", "lltm")
