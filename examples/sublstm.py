"""Train the sublstm workload on synthetic data; `--help` lists the flags (see workloads/train.py)."""

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))  # the repository root, for `import workloads`

from workloads.train import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main("sublstm"))
