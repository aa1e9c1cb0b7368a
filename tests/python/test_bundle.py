"""Kernel bundles: the kernels one process built (tuned ones included) run
in another without a C compiler; a corrupt bundle, one for another target
and a missing file are refused with an error that says why."""

import json
import os
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import neoflow
import pytest
import torch

# Runs an LLTM-like cell (its second output reads the first) and a matmul
# forward and backward, tuned first when TUNE is set, writes the results to
# argv[1] and, given argv[2], saves the bundle there.
CHILD = textwrap.dedent(
    """
    import hashlib, os, sys, torch, neoflow
    torch.manual_seed(0)
    cell = neoflow.op("Cn[b,u] = C[b,u] + X[b,u] * sigmoid(G[b,u])\\nHn[b,u] = tanh(Cn[b,u]) * sigmoid(G[b,u + 8])",
                      name="bundle_cell", outputs=["Cn", "Hn"])
    mm = neoflow.op("Y[i,j] += A[i,k] * B[k,j]", name="bundle_mm")
    C, X, A = (torch.randn(*s, requires_grad=True) for s in [(3, 8), (3, 8), (5, 7)])
    G, B = torch.randn(3, 16, requires_grad=True), torch.randn(7, 4, requires_grad=True)
    if os.environ.get("TUNE"):
        neoflow.tune(mm, A, B, trials=4, progress=False)
    cn, hn = cell(C, X, G, sizes={"u": 8})
    y = mm(A, B)
    (cn.sum() + (hn * 2).sum() + y.sum()).backward()
    torch.save([t.detach() for t in (cn, hn, y, C.grad, X.grad, G.grad, A.grad, B.grad)], sys.argv[1])
    print("hits", mm.specialize(A, B).cache_hit, cell.specialize(C, X, G, sizes={"u": 8}).cache_hit)
    src = hashlib.sha256(mm.specialize(A, B).c_source.encode()).hexdigest()
    print("source", src, "records", neoflow.config.bundle_info()[1])
    if len(sys.argv) > 2:
        m = neoflow.bundle.save(sys.argv[2])
        print("saved", len(m["kernels"]), (m.get("tuning") or {}).get("records", 0))
    """
)


def run_child(tmp_path: Path, name: str, args, **env) -> subprocess.CompletedProcess:
    full = dict(os.environ, NEOFLOW_CACHE_DIR=str(tmp_path / f"cache-{name}"), **env)
    cmd = [sys.executable, "-c", CHILD, *[str(a) for a in args]]
    return subprocess.run(cmd, env=full, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """A bundle saved by a process that tuned the matmul, and its results."""
    tmp = tmp_path_factory.mktemp("bundle")
    out = run_child(tmp, "maker", [tmp / "ref.pt", tmp / "k.nfb"], TUNE="1")
    assert out.returncode == 0, out.stderr[-3000:]
    (tmp / "stdout").write_text(out.stdout)
    kernels, records = (int(x) for x in out.stdout.split("saved")[1].split())
    assert kernels >= 4 and records >= 1, out.stdout  # forward and gradient kernels of both ops; the tuned matmul
    return tmp


def saved_stdout(saved: Path) -> str:
    return (saved / "stdout").read_text()


def test_bundle_runs_without_a_compiler(saved, tmp_path):
    """Another process with an empty cache and no compiler runs forward and backward from the bundle,
    tuned matmul included, with the same results."""
    out = run_child(
        tmp_path, "user", [tmp_path / "got.pt"], NEOFLOW_CC="/nonexistent/cc", NEOFLOW_BUNDLE=str(saved / "k.nfb")
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert "hits True True" in out.stdout
    # The matmul ran with the schedule the maker tuned: the bundle's record was imported and chose it.
    source = lambda text: text.split("source ")[1].split()[0]  # noqa: E731
    records = saved_stdout(saved).split("saved")[1].split()[1]
    assert source(out.stdout) == source(saved_stdout(saved)) and f"records {records}" in out.stdout
    want, got = torch.load(saved / "ref.pt"), torch.load(tmp_path / "got.pt")
    for w, g in zip(want, got):
        assert torch.equal(w, g)


def test_a_kernel_the_bundle_lacks_is_compiled_or_named(saved, tmp_path):
    """New shapes: compiled where a compiler is; without one, an error naming the compiler."""
    code = textwrap.dedent(
        """
        import torch, neoflow
        mm = neoflow.op("Y[i,j] += A[i,k] * B[k,j]", name="bundle_mm")
        print(mm(torch.ones(2, 3), torch.ones(3, 2)).sum().item())
        """
    )
    env = dict(os.environ, NEOFLOW_CACHE_DIR=str(tmp_path / "c"), NEOFLOW_BUNDLE=str(saved / "k.nfb"))
    ok = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert ok.returncode == 0 and ok.stdout.strip() == "12.0", ok.stderr[-2000:]
    env["NEOFLOW_CC"] = "/nonexistent/cc"
    env["NEOFLOW_CACHE_DIR"] = str(tmp_path / "d")
    bad = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert bad.returncode != 0 and "/nonexistent/cc" in bad.stderr and "Traceback" in bad.stderr


def rewrite(src: Path, dst: Path, edit) -> Path:
    """Copies the bundle src to dst with each member passed through edit(name, data)."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED) as zout:
        for info in zin.infolist():
            zout.writestr(info.filename, edit(info.filename, zin.read(info.filename)))
    return dst


def _flip_kernel(name, data):
    if name.startswith("kernels/"):
        data = bytearray(data)
        data[len(data) // 2] ^= 0xFF
    return bytes(data)


def _foreign(name, data):
    if name != "manifest.json":
        return data
    m = json.loads(data)
    m["target"]["host_id"] = "0" * 64
    m["target"]["host"] = "linux/arm64\nCPU implementer:0x41"
    return json.dumps(m).encode()


@pytest.mark.parametrize(
    "edit,message",
    [(_flip_kernel, "does not match its checksum"), (_foreign, "built for another target")],
    ids=["corrupt", "foreign_target"],
)
def test_bad_bundles_are_refused(saved, tmp_path, edit, message):
    bad = rewrite(saved / "k.nfb", tmp_path / "bad.nfb", edit)
    before = neoflow.configure()
    with pytest.raises(neoflow.Error, match=message):
        neoflow.bundle.load(bad)
    assert neoflow.configure() == before  # the failed load changed nothing
    # NEOFLOW_BUNDLE the same: the first use raises, naming the bundle.
    code = "import torch, neoflow; neoflow.op('Y[i] = X[i] * 2.0')(torch.ones(3))"
    env = dict(os.environ, NEOFLOW_CACHE_DIR=str(tmp_path / "c"), NEOFLOW_BUNDLE=str(bad))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode != 0 and message in out.stderr and str(bad) in out.stderr


def test_truncated_and_missing_bundles(saved, tmp_path):
    cut = tmp_path / "cut.nfb"
    cut.write_bytes((saved / "k.nfb").read_bytes()[:200])
    with pytest.raises(neoflow.Error, match="not a readable bundle"):
        neoflow.bundle.load(cut)
    with pytest.raises(FileNotFoundError, match="no such file"):
        neoflow.bundle.load(tmp_path / "none.nfb")
    with pytest.raises(TypeError):
        neoflow.bundle.save(3)
    with pytest.raises(neoflow.Error, match="kernel bundle"):
        neoflow.bundle.save(tmp_path / "no" / "such" / "dir" / "k.nfb")


REMOVED = """
import os, shutil, sys, warnings, torch, neoflow
neoflow.op("C[i] = A[i] * 5.0", name="removed_op")(torch.ones(4))
cache = os.environ["NEOFLOW_CACHE_DIR"]
shutil.rmtree(cache)  # as `neoflow cache clear` in another shell would
os.makedirs(cache)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    manifest = neoflow.bundle.save(sys.argv[1])
print(len(manifest["kernels"]), any("removed_op is no longer in the cache" in str(w.message) for w in caught))
"""


def test_a_kernel_removed_from_the_cache_is_left_out_with_a_warning(tmp_path):
    env = dict(os.environ, NEOFLOW_CACHE_DIR=str(tmp_path / "cache"))
    out = subprocess.run(
        [sys.executable, "-c", REMOVED, str(tmp_path / "k.nfb")], env=env, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.split() == ["0", "True"], out.stdout
