"""bench/workloads.py runs end to end on one small workload and writes its three files."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

CUDA_ONLY = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")

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


def test_workload_bench_without_matplotlib(tmp_path):
    """A plain `pip install .` has no matplotlib: the run says so before it
    starts timing, then writes the JSON and markdown, and no chart."""
    fake = tmp_path / "site" / "matplotlib"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('No module named matplotlib')\n")
    out = tmp_path / "out"
    cmd = [sys.executable, str(ROOT / "bench" / "workloads.py"), "--size", "small", "--batches", "2"]
    cmd += ["--workloads", "lltm", "--repeat", "1", "--warmup", "0", "--no-compile", "--no-ops", "--out", str(out)]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(fake.parent), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    first = proc.stderr.splitlines()[0]
    assert "matplotlib is not installed" in first and "pip install '.[bench]'" in first
    assert {p.suffix for p in out.glob("workloads-*")} == {".json", ".md"}


def _load(name):
    import importlib.util

    sys.path.insert(0, str(ROOT / "bench"))
    spec = importlib.util.spec_from_file_location(f"bench_{name}", ROOT / "bench" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _times(ms):
    return {"median_ms": ms, "min_ms": ms * 0.9, "max_ms": ms * 1.2}


def test_cuda_report_names_the_gpu_and_the_targets():
    """A CUDA run's report (rendered from a made-up result: CI has no GPU) names the GPU and checks the
    capsule-conv and LSTM-cell targets; a CPU run's does not."""
    wl = _load("workloads")
    machine = {"cpu": "Some CPU", "threads": 16, "torch": "2.x", "neoflow": "0.x", "gpu": "NVIDIA H100 80GB HBM3"}
    ops = [
        {"workload": "capsnet", "batch": 16, "op": "capsule_conv1", "forward_torch": _times(3.3)},
        {"workload": "milstm", "batch": 16, "op": "milstm_cell", "fwd_bwd_torch": _times(1.5)},
        {"workload": "shufflenet", "batch": 16, "op": "channel_shuffle"},
    ]
    for r in ops:
        for k in ("forward", "fwd_bwd"):
            for impl in ("torch", "neoflow"):
                r.setdefault(f"{k}_{impl}", _times(1.0))
        r |= {"forward_ratio": 1.0, "backward_ratio": 1.0, "matches": True}
    step = {"workload": "milstm", "batch": 16, "eager": _times(2), "neoflow": _times(1), "speedup_vs_eager": 2.0}
    step["build_s"] = 1.0
    settings = {"size": "bench", "batches": [16], "dtype": "float32", "repeat": 5, "warmup": 1, "warm_cache": False}
    result = {"date": "2026-11-21", "machine": machine | {"device": "cuda", "cuda": "13.0"}, "settings": settings}
    result |= {"steps": [step], "ops": ops, "summary": {"geomean_speedup_vs_eager": 2.0}}
    md = wl.render_markdown(result)
    assert "everything on the GPU, NVIDIA H100 80GB HBM3 (CUDA 13.0)" in md
    assert "| capsule conv forward | capsule_conv1 | 16 | 3.30x | 3x | yes |" in md
    assert "| LSTM-variant cell fwd+bwd | milstm_cell | 16 | 1.50x | 2x | no |" in md
    assert "channel_shuffle |" not in md.split("CUDA backend targets")[1]
    assert wl.machine_tag(result["machine"]) == "nvidia-h100-80gb-hbm3"
    cpu = result | {"machine": machine | {"device": "cpu"}}
    md = wl.render_markdown(cpu)
    assert "CUDA backend targets" not in md and "everything on the CPU (a NVIDIA H100 80GB HBM3 idle)" in md
    assert wl.machine_tag(cpu["machine"]) == "cpu"


def test_gemm_report():
    gemm = _load("gemm")
    variants = [
        {"name": "torch.matmul", "time": _times(2.0), "tflops": 60.0, "vs_matmul": 1.0, "matches": True},
        {"name": "neoflow (default schedule)", "time": _times(4.0), "tflops": 30.0, "vs_matmul": 0.5, "matches": True},
        {"name": "neoflow (tuned)", "time": _times(3.0), "tflops": 40.0, "vs_matmul": 0.667, "matches": True},
    ]
    machine = {"gpu": "NVIDIA H200", "cuda": "13.0", "torch": "2.x", "neoflow": "0.x"}
    tuning = {"trials": 32, "seconds": 40.0, "best_ms": 2.9}
    result = {"date": "2026-11-21", "machine": machine, "n": 4096, "repeat": 20, "variants": variants, "tuning": tuning}
    md = gemm.render_markdown(result)
    assert "GPU NVIDIA H200 (CUDA 13.0)" in md
    assert "| neoflow (tuned) | 3.000 (2.700–3.600) | 40.0 | 67% | yes |" in md
    assert "Best neoflow variant: neoflow (tuned), 67%: met." in md


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_gpu_benchmarks_smoke(tmp_path):
    cmd = [sys.executable, str(ROOT / "bench" / "workloads.py"), "--size", "small", "--batches", "2"]
    cmd += ["--device", "cuda", "--workloads", "lltm", "capsnet", "--repeat", "1", "--warmup", "0"]
    cmd += ["--no-compile", "--out", str(tmp_path)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(next(tmp_path.glob("workloads-*.json")).read_text())
    assert result["machine"]["device"] == "cuda" and result["machine"]["gpu"]
    assert all(r["matches"] for r in result["ops"])
    assert {t["op"] for t in result["targets"]} >= {"lltm_cell", "capsule_conv1"}
    cmd = [sys.executable, str(ROOT / "bench" / "gemm.py"), "--n", "256", "--repeat", "2", "--tune", "4"]
    proc = subprocess.run(cmd + ["--no-compile", "--out", str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(next(tmp_path.glob("gemm-*.json")).read_text())
    assert [v["name"] for v in result["variants"]] == ["torch.matmul", "neoflow (default schedule)", "neoflow (tuned)"]
    assert all(v["matches"] for v in result["variants"])


SMALL_LLTM = ["--size", "small", "--workloads", "lltm"]


@pytest.mark.parametrize(
    "script,args",
    [
        ("overhead", ["--rounds", "1", "--calls", "5"]),
        ("hessian", ["--rounds", "1", "--calls", "1", "--batch", "2", "--width", "4"]),
        ("fusion", ["--rounds", "1", "--repeat", "1", "--warmup", "0", "--size", "small", "--workloads", "lltm"]),
        ("dynamic", [*SMALL_LLTM, "--seconds", "2", "--repeat", "2", "--eager-every", ".5", "--eager-alone"]),
        ("joint", ["--size", "small", "--batch", "2", "--trials", "3", "--workloads", "lltm"]),
        ("bandwidth", ["--mib", "4", "--repeat", "3"]),
        ("models", ["--models", "mlp", "scrnn", "bert", "--repeat", "1", "--warmup", "0", "--no-tuned"]),
        ("models", ["--models", "convnet", "--repeat", "1", "--warmup", "0", "--no-tuned", "--inference"]),
        ("jitter", ["--size", "small", "--batch", "2", "--runs", "2", "--seconds", "1"]),
    ],
)
def test_other_benches_run_and_write_their_files(tmp_path, script, args):
    cmd = [sys.executable, str(ROOT / "bench" / f"{script}.py"), *args, "--out", str(tmp_path)]
    if script not in ("overhead", "hessian", "joint", "bandwidth", "jitter"):
        cmd.append("--no-compile")
    env = dict(os.environ, NEOFLOW_CACHE_DIR=str(tmp_path / "cache"))
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert {p.suffix for p in tmp_path.glob(f"{script}-*")} == {".json", ".md", ".png"}
    result = json.loads(next(tmp_path.glob(f"{script}-*.json")).read_text())
    assert result["machine"]["cpu"] and result["date"]
    if script == "dynamic":  # eager steps timed during the run, every 0.5 s of its 2
        row = result["rows"][0]
        assert len(row["eager_points"]) >= 5
        assert "gc_passes" in row and len(row["over_3x_gc_ms"]) == len(row["over_3x_eager_ms"]) == len(row["over_3x"])
        alone = row["eager_alone"]  # the control: eager trained alone as long
        assert alone["steps"] > 3 and alone["final_ms"] > 0 and alone["worst_after_third_vs_final"] > 0
    if script == "jitter":  # two fresh processes that trained eager alone, neither loading neoflow's library
        assert len(result["runs"]) == 2
        for run in result["runs"]:
            assert not run["neoflow_library_mapped"] and run["steps"] > 3 and len(run["points"]) == run["steps"]
            assert run["worst_after_third_vs_final"] >= 1.0 and len(run["worst_usage"]) == 3


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=CUDA_ONLY)])
def test_gpu_profile_lists_both_models_kernels(device):
    cmd = [sys.executable, str(ROOT / "bench" / "gpu_profile.py"), "shufflenet", "--size", "small", "--batch", "2"]
    cmd += ["--steps", "1", "--top", "5", "--device", device]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "== shufflenet batch 2 eager: 1 steps" in proc.stdout
    assert "== shufflenet batch 2 neoflow: 1 steps" in proc.stdout
    assert ("Self CUDA" if device == "cuda" else "Self CPU") in proc.stdout, proc.stdout[-3000:]


def test_first_call_bench_times_two_builds_in_turns(tmp_path):
    """bench/first_call.py in fresh processes, this build against a baseline (here the same package again)."""
    import neoflow

    build = str(Path(neoflow.__file__).resolve().parent.parent)
    cmd = [sys.executable, str(ROOT / "bench" / "first_call.py"), "--repeat", "1", "--workloads", "lltm"]
    cmd += ["--out", str(tmp_path), "--baseline", build, "--baseline-commit", "same"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(next(tmp_path.glob("first_call-*.json")).read_text())
    (row,) = result["rows"]
    (base,) = result["baseline"]["rows"]
    assert row["op"] == base["op"] == "lltm_cell" and row["first"]["median"] > 0 and base["backend_first"]["median"] > 0
    assert "## Against same (timed in turns)" in next(tmp_path.glob("first_call-*.md")).read_text()


def test_layers_bench_times_each_layer_of_the_backend(tmp_path):
    cmd = [sys.executable, str(ROOT / "bench" / "layers.py"), "--models", "bert", "--repeat", "1"]
    env = dict(os.environ, NEOFLOW_CACHE_DIR=str(tmp_path / "cache"))
    proc = subprocess.run(cmd + ["--out", str(tmp_path)], capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert {p.suffix for p in tmp_path.glob("layers-*")} == {".json", ".md"}
    result = json.loads(next(tmp_path.glob("layers-*.json")).read_text())
    (row,) = result["rows"]
    assert all(row[v]["median_ms"] > 0 for v in ("eager", "dynamo", "aot", "aot decomposed", "neoflow compiled"))
    assert row["choices"] and set(row["choices"]) <= {"neoflow", "eager"}  # the measured choices were made


def test_buckets_bench_times_picked_and_default_schedules(tmp_path):
    """bench/buckets.py: each case's kernel for every size, picked per bucket and with its defaults, at each
    size beside eager."""
    cmd = [sys.executable, str(ROOT / "bench" / "buckets.py"), "--rounds", "1", "--calls", "2", "--out", str(tmp_path)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(next(tmp_path.glob("buckets-*.json")).read_text())
    assert len(result["rows"]) == 25
    assert all(r[f"{v}_us"] > 0 for r in result["rows"] for v in ("default", "picked", "eager"))


def test_shapes_bench_trains_on_varying_lengths(tmp_path):
    """bench/shapes.py: BERT on varying lengths, eager and the backend; the backend lowers the first length's
    static graph, then the graph with symbolic sizes once."""
    cmd = [sys.executable, str(ROOT / "bench" / "shapes.py"), "--steps", "6", "--lengths", "8", "13"]
    cmd += ["--repeat", "1", "--warm", "2", "--variants", "eager", "neoflow", "--out", str(tmp_path)]
    env = dict(os.environ, NEOFLOW_CACHE_DIR=str(tmp_path / "cache"))
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(next(tmp_path.glob("shapes-*.json")).read_text())
    eager, neoflow = result["rows"]
    assert eager["variant"] == "eager" and eager["neoflow_graphs"] is None
    # the first length's static graph, the symbolic one, and at most one more: BERT's first call sets its
    # config's problem_type, which Dynamo's guards see (a graph per length would be 5 or 6)
    assert 2 <= neoflow["neoflow_graphs"] <= 3 and neoflow["static"]["median_ms"] > 0
