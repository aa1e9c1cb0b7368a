"""The curated results archive: bench/results keeps, for each benchmark and
machine, the latest runs, plus every run the docs cite, and
INDEX.md lists them, one line each: benchmark, machine, date, the commit
that added the run, its settings, its headline figure and its files.

    python bench/results_index.py            # rewrite INDEX.md
    python bench/results_index.py --prune    # also delete the superseded runs and test logs

A run is the files of one stem (``models-2026-11-28-cpu-xeon-tuned400.json``,
``.md``, ``.png``). Its machine is the GPU (a CUDA run) or the CPU model its
JSON names, else the machine part of its name. The latest runs are those
added by the newest commit (a batch of variants, GEMM's dtypes say, is
committed together), or not committed yet. Test logs (``.log``) are not
results: --prune deletes them. The benchmark scripts rewrite the index after
writing a run (workloads_module's write_results), so the archive stays
curated; git history keeps the runs that leave it.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
NAME = re.compile(r"^(?P<bench>gpu-check|gpu-profile|[a-z_]+)-(?P<date>\d{4}-\d{2}-\d{2})-(?P<tag>.+)$")
RESULT_SUFFIXES = {".json", ".md", ".png", ".txt"}


def _slug(text: str) -> str:
    """``Intel(R) Xeon(R) Processor`` -> ``intel-xeon``."""
    text = re.sub(r"\((R|TM)\)|\b(Processor|CPU)\b|@.*", "", text, flags=re.I)
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def _json(stem: Path) -> dict:
    try:
        data = json.loads(stem.with_suffix(".json").read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def machine(tag: str, data: dict) -> str:
    """The machine a run ran on: the GPU for a CUDA run, else the CPU model (from its JSON where it has one)."""
    info = data.get("machine")
    if tag.startswith("nvidia-") or (isinstance(info, dict) and info.get("gpu") and "cpu" not in info):
        m = re.match(r"nvidia-[a-z0-9]+", tag)
        return m.group(0) if m else _slug(str(info.get("gpu")))
    if isinstance(info, dict) and info.get("cpu"):
        return _slug(str(info["cpu"]))
    if isinstance(info, str):
        return _slug(info)
    return tag.split("-")[0]


def runs(results: Path) -> dict[str, dict]:
    """Every run in results by stem: bench, date, machine and files."""
    out: dict[str, dict] = {}
    for f in sorted(results.iterdir()):
        m = NAME.match(f.stem)
        if not f.is_file() or m is None:
            continue
        run = out.setdefault(f.stem, {"stem": f.stem, **m.groupdict(), "files": []})
        run["files"].append(f.name)
    for run in out.values():
        run["data"] = _json(results / run["stem"])
        run["machine"] = machine(run["tag"], run["data"])
    return out


def cited(docs: list[Path]) -> set[str]:
    """The stems the docs name, whole or as a pattern (``workloads-2026-11-26-cpu-xeon-stream*``)."""
    text = "\n".join(p.read_text() for p in docs if p.exists())
    names = set(re.findall(r"(?:gpu-check|gpu-profile|[a-z_]+)-\d{4}-\d{2}-\d{2}-[A-Za-z0-9_.*{},-]+", text))
    patterns = set()
    for n in names:
        n = re.sub(r"\.(md|json|png|log|txt|\*)$", "", n.rstrip(".,"))
        patterns.add(re.split(r"[*{]", n)[0] + ("*" if re.search(r"[*{]", n) else ""))
    return patterns


def is_cited(stem: str, patterns: set[str]) -> bool:
    return any(stem.startswith(p[:-1]) if p.endswith("*") else stem == p for p in patterns)


def keep(all_runs: dict[str, dict], patterns: set[str], results: Path) -> set[str]:
    """For each benchmark and machine the latest runs (those of its newest commit: a run not committed yet
    is newer; a batch of variants, such as GEMM's dtypes, is committed together), and the cited ones;
    never test logs only."""
    newest: dict[tuple, tuple] = {}
    for r in all_runs.values():
        if not _results(r):
            continue
        time, _, r["commit"] = _commit(results, r["files"]).partition(" ")
        r["order"] = (time or "9999999999", r["date"])
        key = (r["bench"], r["machine"])
        newest[key] = max(newest.get(key, r["order"]), r["order"])
    return {
        s
        for s, r in all_runs.items()
        if _results(r) and (r["order"] == newest[(r["bench"], r["machine"])] or is_cited(s, patterns))
    }


def _results(run: dict) -> bool:
    return any(Path(f).suffix in RESULT_SUFFIXES for f in run["files"])


def _commit(results: Path, files: list[str]) -> str:
    """The time and short hash of the commit that added the run's files ("1764..., ab12cd3");
    "" outside git or before its commit."""
    out = subprocess.run(
        ["git", "log", "--diff-filter=A", "--format=%ct %h", "-1", "--", *files],
        cwd=results,
        capture_output=True,
        text=True,
    )
    return out.stdout.strip()


def settings(data: dict) -> str:
    s = data.get("settings")
    if not isinstance(s, dict):
        return ""
    parts = [
        f"{k}={','.join(map(str, v)) if isinstance(v, list) else v}"
        for k, v in s.items()
        if k != "out" and v not in (None, False, [], "")
    ]
    text = " ".join(parts)
    return text if len(text) <= 90 else text[:87] + "..."


def headline(run: dict, results: Path) -> str:
    """The run's summary figure: a geometric mean or summary from its JSON, else its report's first such line."""
    data = run["data"]
    if isinstance(data.get("zoo"), dict) and isinstance(data["zoo"].get("vs eager"), float):
        z = data["zoo"]
        items = [f"{k} {v:.2f}x" for k, v in z.items() if isinstance(v, float)]
        return "public models, neoflow " + ", ".join(items)
    if isinstance(data.get("geomean"), dict):
        return "geomean " + ", ".join(f"{k} {v:.2f}x" for k, v in data["geomean"].items() if isinstance(v, float))
    if isinstance(data.get("summary"), dict):
        items = [(k, v) for k, v in data["summary"].items() if "speedup" in k and isinstance(v, float)]
        if items:
            return ", ".join(f"{k.replace('geomean_speedup_', '')} {v:.2f}x" for k, v in items)
    md = results / f"{run['stem']}.md"
    if md.exists():
        for line in md.read_text().splitlines():
            if re.search(r"geomean|geometric mean", line, re.I) and not line.startswith("|"):
                return line.strip("#*- ")[:100]
    return ""


def write_index(results: Path, all_runs: dict[str, dict], kept: set[str], patterns: set[str]) -> Path:
    rows = sorted((all_runs[s] for s in kept), key=lambda r: (r["bench"], r["machine"], r["date"], r["stem"]))
    lines = [
        "# Benchmark results",
        "",
        "Written by `python bench/results_index.py`: for each benchmark and machine the latest runs,",
        "and the runs the docs cite (marked *cited*). Older runs are in git history. Each benchmark's",
        "script in `bench/` says what it measures and how; speed is reported there, never asserted in tests.",
        "",
        "| benchmark | machine | date | commit | settings | headline | files |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        files = " ".join(f"[{Path(f).suffix[1:]}]({f})" for f in sorted(r["files"]))
        date = r["date"] + (" *cited*" if is_cited(r["stem"], patterns) else "")
        commit = r["commit"] or "not committed"
        cells = [r["bench"], r["machine"], date, commit, settings(r["data"]), headline(r, results)]
        cells = [c.replace("|", "/") for c in cells]
        lines.append("| " + " | ".join(cells) + f" | {files} |")
    index = results / "INDEX.md"
    index.write_text("\n".join(lines) + "\n")
    return index


def refresh(results: Path = RESULTS, prune: bool = False) -> tuple[int, int]:
    """Rewrites results/INDEX.md (and with prune deletes the runs not kept); returns (kept, deleted) runs."""
    docs = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    patterns = cited(docs)
    all_runs = runs(results)
    kept = keep(all_runs, patterns, results)
    deleted = 0
    if prune:
        for stem, r in all_runs.items():
            if stem not in kept:
                for f in r["files"]:
                    (results / f).unlink()
                deleted += 1
        all_runs = {s: r for s, r in all_runs.items() if s in kept}
    write_index(results, all_runs, kept, patterns)
    return len(kept), deleted


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--prune", action="store_true", help="delete the runs not kept, and test logs")
    ap.add_argument("--results", type=Path, default=RESULTS)
    args = ap.parse_args(argv)
    kept, deleted = refresh(args.results, args.prune)
    print(f"{args.results / 'INDEX.md'}: {kept} runs" + (f"; deleted {deleted}" if args.prune else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
