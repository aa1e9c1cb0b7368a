"""What a user installing neoflow meets: the PyTorch range, the package
metadata, the sdist's contents (scripts/check-sdist.sh builds it in CI)."""

import re
import subprocess
import sys
from pathlib import Path

import neoflow
import pytest
import torch
from neoflow import version

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("old", ["2.4.1", "2.5.1+cu124", "1.13.0"])
def test_an_older_torch_is_refused_naming_both_versions(old):
    with pytest.raises(ImportError) as e:
        version.check_torch(old)
    assert f"PyTorch >= {version.MIN_TORCH}" in str(e.value) and old in str(e.value)
    assert "pip install 'torch>=" in str(e.value)


@pytest.mark.parametrize("ok", [version.MIN_TORCH, f"{version.MIN_TORCH}.0+cu124", "2.15.0+cu132", "2.99.0"])
def test_supported_torch_versions_pass(ok):
    version.check_torch(ok)


def test_this_torch_is_in_range():
    version.check_torch(torch.__version__)
    assert neoflow.__version__ == version.__version__


def _setup_metadata(field: str) -> str:
    out = subprocess.run(
        [sys.executable, "setup.py", "-q", f"--{field}"], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_setup_declares_the_range_the_package_checks():
    text = (ROOT / "setup.py").read_text()
    assert 'f"torch>={min_torch()},<3"' in text
    assert re.search(r'^MIN_TORCH = "2\.\d+"$', (ROOT / "pyext/neoflow/version.py").read_text(), re.M)


def test_metadata_a_package_index_shows():
    # The built wheel's METADATA is checked by scripts/check_wheel.py.
    assert 'license_expression="MIT"' in (ROOT / "setup.py").read_text()
    assert (ROOT / "LICENSE").read_text().startswith("MIT License")
    classifiers = _setup_metadata("classifiers").splitlines()
    for want in ("Operating System :: POSIX :: Linux", "Programming Language :: Python :: 3.13"):
        assert want in classifiers
    assert _setup_metadata("version") == neoflow.__version__


def test_the_generated_header_is_not_tracked():
    tracked = subprocess.run(["git", "ls-files", "*.h"], cwd=ROOT, capture_output=True, text=True).stdout.split()
    assert not [p for p in tracked if p.endswith("libneoflow.h")], tracked


def test_no_script_edits_the_machines_package_sources():
    for script in (ROOT / "scripts").iterdir():
        if script.suffix in (".sh", "") and script.is_file():
            text = script.read_text()
            assert "sources.list" not in text and "apt-get update" not in text, script
    assert "sources.list" not in (ROOT / ".ci" / "run").read_text()


def _check_wheel_module():
    import importlib.util

    spec = importlib.util.spec_from_file_location("check_wheel", ROOT / "scripts" / "check_wheel.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_check_wheel_finds_what_a_wheel_lacks_or_needs(tmp_path):
    """scripts/check_wheel.py, which CI runs on the release wheel, reports a missing library, missing
    metadata, and a library built against the build machine's glibc (dlopen is GLIBC_2.34 there)."""
    import zipfile

    src = tmp_path / "lib.c"
    src.write_text("#include <dlfcn.h>\nvoid *nf_open(const char *p) { return dlopen(p, RTLD_NOW); }\n")
    so = tmp_path / "libneoflow.so"
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(so), str(src), "-ldl"], check=True)
    wheel = tmp_path / "neoflow-0.1.0-cp310-abi3-linux_x86_64.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        z.write(so, "neoflow/libneoflow.so")
        z.writestr("neoflow-0.1.0.dist-info/METADATA", "Name: neoflow\nRequires-Python: >=3.10\n")
    problems = "\n".join(_check_wheel_module().check(wheel, "2.17"))
    assert "lacks neoflow/libneoflow_cuda.so" in problems and "lacks neoflow/_launch.abi3.so" in problems
    assert "METADATA lacks 'License-Expression: MIT'" in problems and "lacks the LICENSE" in problems
    assert "neoflow/libneoflow.so is not stripped" in problems
    glibc = subprocess.run(["ldd", "--version"], capture_output=True, text=True).stdout.split("\n")[0].split()[-1]
    if tuple(int(p) for p in glibc.split(".")) >= (2, 34):
        assert "neoflow/libneoflow.so needs GLIBC_2.34" in problems, problems
