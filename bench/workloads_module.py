"""bench/workloads.py as a module, for the benchmarks that reuse its setup,
timing and charts (imported by name it would shadow the workloads package)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path


def load():
    """bench/workloads.py, loaded once per process."""
    mod = sys.modules.get("bench_workloads")
    if mod is None:
        spec = importlib.util.spec_from_file_location("bench_workloads", Path(__file__).with_name("workloads.py"))
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        sys.modules["bench_workloads"] = mod
    return mod
