"""Checks a built neoflow wheel: auditwheel finds it consistent with its
manylinux tag with the CUDA driver (libcuda.so.1) as the only library from
outside; both libraries and the launch's extension module are in it, stripped, needing no glibc symbol
version newer than the tag's (objdump -T) and no shared library besides
glibc's parts and the CUDA driver (readelf -d); the license and the
metadata a package index shows are in it.

    python scripts/check_wheel.py dist/neoflow-*.whl --plat manylinux_2_17_x86_64
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

# the Go libraries (CPU-only and CUDA) and the launch's extension module (neoflow._launch, limited API)
LIBS = ("neoflow/libneoflow.so", "neoflow/libneoflow_cuda.so", "neoflow/_launch.abi3.so")
TAG = "-cp310-abi3-"  # one wheel for every CPython from 3.10 on
# What the libraries may link: glibc's parts (on glibc 2.17 dlopen and
# pthread_create live in libdl and libpthread) and, for the CUDA build, the
# driver, which the user's machine provides.
ALLOWED_NEEDED = {
    "libc.so.6",
    "libpthread.so.0",
    "libdl.so.2",
    "libm.so.6",
    "librt.so.1",
    "libresolv.so.2",
    "ld-linux-x86-64.so.2",
    "libcuda.so.1",
}


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in text.split("."))


def audit(path: Path, plat: str) -> list[str]:
    """auditwheel show's verdict: the tag the symbols allow, and the libraries from outside the wheel."""
    out = subprocess.run(
        [sys.executable, "-m", "auditwheel", "show", "--json", str(path)], capture_output=True, text=True
    )
    if out.returncode != 0:
        return [f"auditwheel show failed: {out.stderr.strip()}"]
    report = json.loads(out.stdout)
    print(f"auditwheel show: symbols allow {report['sym_tag']}; from outside: {', '.join(report['external_libs'])}")
    problems = []
    if report["sym_tag"] != plat:
        problems.append(f"auditwheel show: the symbols allow {report['sym_tag']}, not {plat}")
    outside = sorted(set(report["external_libs"]) - {"libcuda.so.1"})
    if outside:
        problems.append(f"auditwheel show: libraries from outside the wheel besides the CUDA driver: {outside}")
    if f"{plat}" not in path.name:
        problems.append(f"{path.name} is not tagged {plat}")
    if TAG not in path.name:
        problems.append(f"{path.name} is not tagged {TAG.strip('-')}")
    return problems


# Metadata a package index shows: each line must be in the wheel's METADATA.
METADATA = (
    "License-Expression: MIT",
    "License-File: LICENSE",
    "Requires-Python: >=3.10",
    "Classifier: Operating System :: POSIX :: Linux",
    "Description-Content-Type: text/markdown",
)


def check(path: Path, max_glibc: str) -> list[str]:
    problems = []
    with zipfile.ZipFile(path) as z, tempfile.TemporaryDirectory() as tmp:
        names = set(z.namelist())
        meta = next((n for n in names if n.endswith(".dist-info/METADATA")), None)
        lines = z.read(meta).decode().splitlines() if meta else []
        problems += [f"METADATA lacks {want!r}" for want in METADATA if want not in lines]
        if not any(line.startswith("Requires-Dist: torch") for line in lines):
            problems.append("METADATA does not require torch")
        if not any(n.endswith(".dist-info/licenses/LICENSE") for n in names):
            problems.append(f"{path.name} lacks the LICENSE")
        for lib in LIBS:
            if lib not in names:
                problems.append(f"{path.name} lacks {lib}")
                continue
            so = Path(z.extract(lib, tmp))
            symbols = subprocess.run(["objdump", "-T", str(so)], capture_output=True, text=True, check=True).stdout
            glibc = sorted({v for v in re.findall(r"GLIBC_([0-9.]+)", symbols)}, key=_version)
            newer = [v for v in glibc if _version(v) > _version(max_glibc)]
            if newer:
                problems.append(f"{lib} needs GLIBC_{', GLIBC_'.join(newer)} (newer than {max_glibc})")
            dynamic = subprocess.run(["readelf", "-d", str(so)], capture_output=True, text=True, check=True).stdout
            needed = re.findall(r"\(NEEDED\).*\[(.+)\]", dynamic)
            extra = sorted(set(needed) - ALLOWED_NEEDED)
            if extra:
                problems.append(f"{lib} links {', '.join(extra)}, which a user's machine may lack")
            sections = subprocess.run(["readelf", "-S", "-W", str(so)], capture_output=True, text=True, check=True)
            unstripped = sorted(set(re.findall(r"\] (\.symtab|\.debug_\w+)", sections.stdout)))
            if unstripped:
                problems.append(f"{lib} is not stripped ({', '.join(unstripped)})")
            print(
                f"{lib}: {so.stat().st_size / 1e6:.1f} MB, glibc {glibc[-1] if glibc else 'none'} at most, "
                f"links {', '.join(needed)}"
            )
    return problems


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("wheel", type=Path)
    ap.add_argument("--plat", default="manylinux_2_17_x86_64", help="the tag (default manylinux_2_17_x86_64)")
    args = ap.parse_args()
    m = re.fullmatch(r"manylinux_(\d+)_(\d+)_x86_64", args.plat)
    if not m:
        ap.error(f"--plat: expected manylinux_X_Y_x86_64, got {args.plat!r}")
    problems = audit(args.wheel, args.plat) + check(args.wheel, f"{m.group(1)}.{m.group(2)}")
    for p in problems:
        print(f"check_wheel: {p}", file=sys.stderr)
    if not problems:
        print(f"{args.wheel.name}: ok ({args.wheel.stat().st_size / 1e6:.1f} MB)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
