"""bench/results_index.py, which keeps bench/results curated: the latest runs of each benchmark and machine,
the cited ones, no test logs, and an INDEX.md listing what it kept."""

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _module():
    spec = importlib.util.spec_from_file_location("results_index", ROOT / "bench" / "results_index.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _run(results: Path, stem: str, cpu: str, settings: dict, geomean: float | None = None) -> None:
    data = {"date": stem.split("-cpu")[0][-10:], "machine": {"cpu": cpu}, "settings": settings}
    if geomean is not None:
        data["geomean"] = {"untuned": geomean}
    (results / f"{stem}.json").write_text(json.dumps(data))
    (results / f"{stem}.md").write_text(f"# {stem}\n")


def test_prune_keeps_the_latest_run_per_benchmark_and_machine(tmp_path, monkeypatch):
    ri = _module()
    results = tmp_path / "results"
    results.mkdir()
    _run(results, "models-2026-11-26-cpu", "Intel(R) Xeon(R) Processor", {"repeat": 5})
    _run(results, "models-2026-11-28-cpu-xeon", "Intel(R) Xeon(R) Processor", {"repeat": 5, "out": "/x"}, 1.043)
    _run(results, "models-2026-11-27-cpu", "AMD EPYC", {"repeat": 5})  # another machine: kept
    _run(results, "workloads-2026-11-20-cpu-old", "AMD EPYC", {})  # cited by the docs: kept
    _run(results, "workloads-2026-11-25-cpu", "AMD EPYC", {})
    (results / "gpu-check-2026-11-26-nvidia-h200-tests.log").write_text("1 passed\n")  # a test log: deleted
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "page.md").write_text("As `bench/results/workloads-2026-11-20-cpu-old.md` shows...\n")
    monkeypatch.setattr(ri, "ROOT", tmp_path)
    kept, deleted = ri.refresh(results, prune=True)
    assert (kept, deleted) == (4, 2)
    assert sorted(p.name for p in results.iterdir()) == [
        "INDEX.md",
        "models-2026-11-27-cpu.json",
        "models-2026-11-27-cpu.md",
        "models-2026-11-28-cpu-xeon.json",
        "models-2026-11-28-cpu-xeon.md",
        "workloads-2026-11-20-cpu-old.json",
        "workloads-2026-11-20-cpu-old.md",
        "workloads-2026-11-25-cpu.json",
        "workloads-2026-11-25-cpu.md",
    ]
    index = (results / "INDEX.md").read_text()
    assert "| models | intel-xeon | 2026-11-28 | not committed | repeat=5 | geomean untuned 1.04x |" in index
    assert "| workloads | amd-epyc | 2026-11-20 *cited* |" in index
    assert "[json](models-2026-11-27-cpu.json) [md](models-2026-11-27-cpu.md)" in index


def test_the_archive_is_curated():
    """bench/results as committed: every run in INDEX.md, no test logs."""
    results = ROOT / "bench" / "results"
    index = (results / "INDEX.md").read_text()
    for f in results.iterdir():
        assert f.suffix != ".log", f
        if f.name != "INDEX.md":
            assert f"({f.name})" in index, f"{f.name} is not in bench/results/INDEX.md: run bench/results_index.py"
