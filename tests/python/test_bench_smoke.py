"""bench/workloads.py runs end to end on one small workload and writes its three files."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_workload_bench_smoke(tmp_path):
    cmd = [sys.executable, str(ROOT / "bench" / "workloads.py"), "--size", "small", "--batches", "2"]
    cmd += ["--workloads", "lltm", "--repeat", "1", "--warmup", "0", "--no-compile", "--out", str(tmp_path)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    files = {p.suffix: p for p in tmp_path.glob("workloads-*")}
    assert set(files) == {".json", ".md", ".png"}
    assert files[".png"].stat().st_size > 0
    result = json.loads(files[".json"].read_text())
    assert {"date", "machine", "settings", "steps", "ops", "summary"} <= set(result)
    assert {"cpu", "threads", "torch", "neoflow", "gpu"} <= set(result["machine"])
    (row,) = result["steps"]
    assert row["workload"] == "lltm" and row["batch"] == 2
    assert {"eager", "neoflow", "speedup_vs_eager", "build_s"} <= set(row)
    assert {"median_ms", "min_ms", "max_ms"} <= set(row["neoflow"])
    assert result["ops"] and result["ops"][0]["matches"]
    assert {"forward_neoflow", "forward_torch", "fwd_bwd_neoflow", "fwd_bwd_torch"} <= set(result["ops"][0])
    assert "Geometric mean" in files[".md"].read_text()
