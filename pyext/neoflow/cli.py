"""neoflow's command line: ``python -m neoflow COMMAND`` (or ``neoflow COMMAND``).

Commands:

  info                 version, native library, C compiler, CUDA, cache and tuning records
  cache clear [--all]  delete the compiled kernels (and with --all the tuning records)
  tunedb ACTION ...    the tuning database: list, show, clear, export, import
  bundle info FILE     a kernel bundle's manifest: version, target, kernels by op, records
  bundle check FILE    whether this machine can use the bundle (every member verified)
  explain EXPR ...     the derived gradient and the fusion plan of an expression
                       (or of FILE.py:NAME, an op defined in a file)

``neoflow --version`` prints the version; ``COMMAND --help`` describes each. The
cache is NEOFLOW_CACHE_DIR's, by default the user's cache directory.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile

from . import _lib, config, tunedb
from .errors import Error
from .version import __version__

# What the cache directory holds besides what a user may have put there:
# kernels in two-hex-digit directories, CUDA modules, the machine's fusion
# rates; the tuning records in tune/.
_KERNEL_DIR = re.compile(r"[0-9a-f]{2}")
_RECORD = re.compile(r"[0-9a-f]{32}")
_KERNEL_ENTRIES = ("fusion-rates.json",)


def _cache_dir() -> str:
    return config.ensure_info()["cache_dir"]


def _size(path: str) -> tuple[int, int]:
    """Files and bytes under path (a file or a directory)."""
    if os.path.isfile(path) or os.path.islink(path):
        return 1, os.lstat(path).st_size
    files = total = 0
    for root, _, names in os.walk(path):
        for n in names:
            try:
                total += os.lstat(os.path.join(root, n)).st_size
                files += 1
            except OSError:  # removed meanwhile by another process
                pass
    return files, total


def _kernel_entries(cache: str) -> list[str]:
    try:
        names = os.listdir(cache)
    except FileNotFoundError:
        return []
    return sorted(
        os.path.join(cache, n)
        for n in names
        if n in _KERNEL_ENTRIES or (_KERNEL_DIR.fullmatch(n) and os.path.isdir(os.path.join(cache, n)))
    )


def _records(cache: str) -> int:
    try:
        return sum(1 for n in os.listdir(os.path.join(cache, "tune")) if _RECORD.fullmatch(n))
    except FileNotFoundError:
        return 0


def _mb(n: int) -> str:
    return f"{n / 1e6:.1f} MB"


def _compiler() -> str:
    cc = os.environ.get("NEOFLOW_CC") or "cc"
    path = shutil.which(cc)
    if path is None:
        return (
            f"{cc}: not found (install gcc or clang, or set NEOFLOW_CC; "
            "kernels then come only from the cache or a bundle)"
        )
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30)
        first = (out.stdout or out.stderr).strip().splitlines()
        return f"{cc} -> {path}: {first[0] if first else 'no version output'}"
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"{cc} -> {path}: does not run ({e})"


def _cuda(has_backend: bool) -> str:
    import torch

    n = torch.cuda.device_count() if torch.cuda.is_available() else 0
    devices = ", ".join(torch.cuda.get_device_name(i) for i in range(n)) if n else "none"
    if has_backend:
        backend = "yes"
    elif _lib.library_path().with_name(_lib._CUDA_LIB_NAME).exists():
        backend = "installed, not loaded (no usable GPU)"
    else:
        backend = "no (CPU-only build)"
    nvrtc = _lib.nvrtc_dirs()
    return f"devices: {devices}; library CUDA backend: {backend}; NVRTC: {nvrtc[0] if nvrtc else 'not found'}"


def info(_args) -> int:
    settings = config.ensure_info()
    cache = settings["cache_dir"]
    files = total = 0
    for p in _kernel_entries(cache):
        f, b = _size(p)
        files, total = files + f, total + b
    rows = [
        ("neoflow", settings["version"]),
        ("library", str(_lib.library_path())),
        ("compiler", _compiler()),
        ("cuda", _cuda(settings["cuda"])),
        ("cache", f"{cache}: {files} files, {_mb(total)}"),
        ("tuning", f"{_records(cache)} records in {os.path.join(cache, 'tune')}"),
        ("tune mode", config.tune_mode() or "default"),
    ]
    for k, v in rows:
        print(f"{k:<10} {v}")
    return 0


def cache_clear(args) -> int:
    cache = _cache_dir()
    doomed = _kernel_entries(cache)
    if args.all and os.path.isdir(os.path.join(cache, "tune")):
        doomed.append(os.path.join(cache, "tune"))
    files = total = 0
    for p in doomed:
        f, b = _size(p)
        files, total = files + f, total + b
        if os.path.isdir(p) and not os.path.islink(p):
            shutil.rmtree(p, ignore_errors=True)
        else:
            try:
                os.remove(p)
            except FileNotFoundError:
                pass
    kept = "" if args.all else f"; kept {_records(cache)} tuning records (--all deletes them)"
    print(f"removed {files} files, {_mb(total)} from {cache}{kept}")
    return 0


def _manifest(path: str) -> dict:
    try:
        with zipfile.ZipFile(path) as z:
            return json.loads(z.read("manifest.json"))
    except (zipfile.BadZipFile, KeyError, ValueError) as e:
        raise ValueError(f"{path} is not a neoflow kernel bundle ({e})") from None


def _target(host: str) -> str:
    """A bundle's host description in one line: platform, CPU model, count of CPU features."""
    lines = host.splitlines()
    fields = dict(line.split(":", 1) for line in lines[1:] if ":" in line)
    parts = [lines[0] if lines else "unknown platform"]
    if "model name" in fields:
        parts.append(fields["model name"].strip())
    if "flags" in fields:
        parts.append(f"{len(fields['flags'].split())} CPU features")
    return ", ".join(parts)


def bundle_info(args) -> int:
    m = _manifest(args.file)
    target = m.get("target", {})
    ops = collections.Counter(k.get("op", "?") for k in m.get("kernels", []))
    records = (m.get("tuning") or {}).get("records", 0)
    print(
        f"bundle    {args.file} (format {m.get('format')}, made by neoflow {m.get('neoflow')}, {m.get('created', '?')})"
    )
    print(f"target    {_target(target.get('host', ''))}; compiler flags {' '.join(target.get('flags') or [])}")
    print(f"kernels   {sum(ops.values())}: " + (", ".join(f"{op} x{n}" for op, n in sorted(ops.items())) or "none"))
    print(f"tuning    {records} records")
    return 0


def bundle_check(args) -> int:
    # Opened as configure(bundle=...) opens it, with a throwaway cache: its
    # records are imported there, not into the user's tuning database.
    with tempfile.TemporaryDirectory(prefix="neoflow-bundle-check-") as tmp:
        config.configure(cache_dir=tmp, bundle=args.file)
        kernels, records = config.bundle_info()
    print(f"ok: {args.file} runs here ({kernels} kernels, {records} tuning records)")
    return 0


def _shape(text: str) -> list[int]:
    try:
        dims = [int(d) for d in text.lower().split("x")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"a shape is sizes joined by 'x' (4x5), got {text!r}") from None
    if any(d < 0 for d in dims):
        raise argparse.ArgumentTypeError(f"a shape's sizes must not be negative, got {text!r}")
    return dims


def _size_arg(text: str) -> tuple[str, int]:
    name, eq, value = text.partition("=")
    if not eq or not name.isidentifier():
        raise argparse.ArgumentTypeError(f"a size is NAME=VALUE (k=3), got {text!r}")
    try:
        return name, int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"size {name} must be an integer, got {value!r}") from None


def _op_from_file(path: str, name: str):
    """The op named name in the Python file path (run as a module)."""
    import importlib.util

    from .op import Op

    spec = importlib.util.spec_from_file_location(f"_neoflow_explain_{abs(hash(path))}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    op = getattr(module, name, None)
    if not isinstance(op, Op):
        what = "nothing" if op is None else f"an object of type {type(op).__name__}"
        raise ValueError(f"{path} defines {what} as {name}, not a neoflow op (neoflow.op or @neoflow.op)")
    return op


def explain(args) -> int:
    import torch

    from .op import Op

    file_op = re.fullmatch(r"(.+\.py):([A-Za-z_]\w*)", args.expr)
    if file_op and os.path.isfile(file_op.group(1)):
        op = _op_from_file(*file_op.groups())
    else:
        op = Op(args.expr, name=args.name, inputs=args.inputs, outputs=args.outputs)
    if len(args.shapes) != len(op.inputs):
        print(
            f"neoflow explain: --shapes needs one shape per input ({', '.join(op.inputs)}), got {len(args.shapes)}",
            file=sys.stderr,
        )
        return 2
    dtype = getattr(torch, args.dtype)
    tensors = [torch.zeros(s, dtype=dtype) for s in args.shapes]
    sizes = dict(args.sizes) or None
    print("# gradient")
    print(op.explain_grad(*tensors, sizes=sizes).rstrip())
    print("\n# tangent (forward mode)")
    print(op.explain_jvp(*tensors, sizes=sizes).rstrip())
    print("\n# fusion")
    print(op.explain_fusion(*tensors, sizes=sizes).rstrip())
    return 0


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="neoflow", description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--version", action="version", version=f"neoflow {__version__}")
    sub = ap.add_subparsers(dest="command", metavar="COMMAND")
    p = sub.add_parser("info", help="version, native library, C compiler, CUDA, cache and tuning records")
    p.set_defaults(run=info)
    p = sub.add_parser("cache", help="the kernel cache")
    csub = p.add_subparsers(dest="cache_command", metavar="ACTION", required=True)
    c = csub.add_parser(
        "clear",
        help="delete the compiled kernels",
        description="Deletes the compiled kernels, CUDA modules and measured fusion rates from the cache "
        "directory (rebuilt when next needed); other files there are left alone. Processes running "
        "kernels keep them.",
    )
    c.add_argument("--all", action="store_true", help="also delete the tuning records")
    c.set_defaults(run=cache_clear)
    p = sub.add_parser(
        "tunedb",
        help="the tuning database's commands",
        description="The tuning database (NEOFLOW_CACHE_DIR/tune): the schedules the tuners chose, by op and shape.",
    )
    tunedb.add_commands(p)
    p = sub.add_parser("bundle", help="kernel bundles (neoflow.bundle.save)")
    bsub = p.add_subparsers(dest="bundle_command", metavar="ACTION", required=True)
    b = bsub.add_parser("info", help="a bundle's manifest: version, target, kernels by op, records")
    b.add_argument("file")
    b.set_defaults(run=bundle_info)
    b = bsub.add_parser(
        "check",
        help="whether this machine can use the bundle",
        description="Opens the bundle as NEOFLOW_BUNDLE would (format, neoflow version, target CPU and flags, "
        "every member's size and checksum) without touching the cache or the tuning database.",
    )
    b.add_argument("file")
    b.set_defaults(run=bundle_check)
    p = sub.add_parser(
        "explain",
        help="the derived gradient, tangent and fusion plan of an expression",
        description="Prints the gradient and the tangent (forward mode) neoflow derives for EXPR and what its "
        "fusion passes do, for inputs of the given shapes, as Op.explain_grad, Op.explain_jvp and "
        "Op.explain_fusion do. "
        "Example: neoflow explain 'C[i,j] += A[i,k] * B[k,j]' --shapes 4x5 5x6",
    )
    p.add_argument(
        "expr",
        help="the op's statements (separate several with newlines or ';'), or FILE.py:NAME, an op a file defines",
    )
    p.add_argument(
        "--shapes", nargs="+", type=_shape, required=True, metavar="SHAPE", help="each input's shape, as 4x5"
    )
    p.add_argument("--inputs", nargs="+", help="the inputs' names in order (default: order of first use)")
    p.add_argument("--outputs", nargs="+", help="the outputs' names in order")
    p.add_argument("--sizes", nargs="+", type=_size_arg, default=[], metavar="NAME=N", help="sizes of free indices")
    p.add_argument("--name", default="op", help="the op's name")
    p.add_argument("--dtype", default="float32", choices=["float32", "float64", "float16", "bfloat16"])
    p.set_defaults(run=explain)
    return ap


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    ap = _parser()
    if not argv:
        ap.print_help()
        return 2
    args = ap.parse_args(argv)
    try:
        return args.run(args)
    except BrokenPipeError:  # the reader went away (| head): stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except (Error, ValueError, TypeError, OSError) as e:
        print(f"neoflow {args.command}: {e}", file=sys.stderr)
        return 1
