"""The installed wheel's smoke test, run by scripts/smoke-wheel.sh in fresh
environments with no Go and no checkout on sys.path:

- an op forward and backward against PyTorch (gradcheck in float64);
- torch.compile(model, backend="neoflow") through the package's entry point;
- a kernel bundle made here and loaded by a process without a C compiler;
- ``python -m neoflow info`` and ``neoflow --version``.

    python tests/smoke/smoke.py

It prints one line per check and exits non-zero at the first failure.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

import neoflow
import torch

OP = "C[i,j] += A[i,k] * B[k,j]\nD[i,j] = tanh(C[i,j]) * 2.0"


def check(what: str, ok: bool, detail: str = "") -> None:
    print(f"{'ok  ' if ok else 'FAIL'} {what}{': ' + detail if detail else ''}", flush=True)
    if not ok:
        sys.exit(1)


def installed() -> None:
    where = Path(neoflow.__file__).resolve()
    check("neoflow is the installed package", "site-packages" in where.parts, str(where))
    check("no Go on PATH", shutil.which("go") is None, shutil.which("go") or "")
    lib = neoflow._lib.library_path()
    check("the library ships in the wheel", lib.is_file() and lib.parent == where.parent, str(lib))


def op_forward_backward() -> None:
    op = neoflow.op(OP, name="smoke_op")
    for dtype, tol in ((torch.float32, 1e-5), (torch.float64, 1e-12)):
        a = torch.randn(5, 7, dtype=dtype, requires_grad=True)
        b = torch.randn(7, 3, dtype=dtype, requires_grad=True)
        got = op(a, b)
        want = torch.tanh(a @ b) * 2.0
        check(f"forward {dtype}", torch.allclose(got, want, atol=tol, rtol=tol))
        g = torch.randn_like(got)
        ga, gb = torch.autograd.grad(got, (a, b), g)
        wa, wb = torch.autograd.grad(want, (a, b), g)
        check(
            f"backward {dtype}",
            torch.allclose(ga, wa, atol=tol, rtol=tol) and torch.allclose(gb, wb, atol=tol, rtol=tol),
        )
    a = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
    b = torch.randn(4, 2, dtype=torch.float64, requires_grad=True)
    check("gradcheck float64", torch.autograd.gradcheck(op, (a, b)))


def backend() -> None:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.LayerNorm(16), torch.nn.Linear(16, 4))
    x = torch.randn(6, 8)
    compiled = torch.compile(model, backend="neoflow")
    got = compiled(x)
    want = model(x)
    check("torch.compile(backend='neoflow') forward", torch.allclose(got, want, atol=1e-5, rtol=1e-4))
    got.sum().backward()
    grads = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    model(x).sum().backward()
    same = all(torch.allclose(g, p.grad, atol=1e-5, rtol=1e-4) for g, p in zip(grads, model.parameters()))
    check("torch.compile(backend='neoflow') backward", same)


USE_BUNDLE = """
import sys, torch, neoflow
op = neoflow.op(sys.argv[1], name="smoke_op")
torch.manual_seed(1)
a = torch.randn(5, 7, dtype=torch.float64, requires_grad=True)
b = torch.randn(7, 3, dtype=torch.float64, requires_grad=True)
y = op(a, b)
y.sum().backward()
assert torch.allclose(y, torch.tanh(a @ b) * 2.0)
print("ran from the bundle")
"""


def bundle(tmp: Path) -> None:
    # This process has compiled smoke_op's float64 kernels for these shapes: bundle them.
    path = tmp / "smoke.nfb"
    manifest = neoflow.bundle.save(path)
    check("bundle saved", path.is_file(), f"{len(manifest['kernels'])} kernels")
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEOFLOW_")}
    env.update(
        NEOFLOW_CACHE_DIR=str(tmp / "empty-cache"), NEOFLOW_CC=str(tmp / "no-compiler"), NEOFLOW_BUNDLE=str(path)
    )
    out = subprocess.run([sys.executable, "-c", USE_BUNDLE, OP], env=env, capture_output=True, text=True, timeout=600)
    check("the bundle runs without a C compiler", out.returncode == 0, (out.stdout + out.stderr).strip()[-2000:])


def command_line() -> None:
    out = subprocess.run([sys.executable, "-m", "neoflow", "info"], capture_output=True, text=True, timeout=600)
    check("python -m neoflow info", out.returncode == 0 and "library" in out.stdout, (out.stdout + out.stderr)[-2000:])
    script = Path(sysconfig.get_path("scripts")) / "neoflow"
    out = subprocess.run([str(script), "--version"], capture_output=True, text=True, timeout=600)
    want = f"neoflow {neoflow.version.__version__}"
    check("neoflow --version", out.returncode == 0 and out.stdout.strip() == want, out.stdout + out.stderr)


def main() -> None:
    print(f"python {sys.version.split()[0]}, torch {torch.__version__}, neoflow {neoflow.version.__version__}")
    with tempfile.TemporaryDirectory(prefix="neoflow-smoke-") as tmp:
        neoflow.configure(cache_dir=Path(tmp) / "cache")
        installed()
        op_forward_backward()
        backend()
        bundle(Path(tmp))
        command_line()
    print("smoke test passed")


if __name__ == "__main__":
    main()
