"""Builds neoflow: the Go core as a c-shared library, plus the Python package.

`pip install .` runs `go build -buildmode=c-shared ./capi` and installs the
library inside the `neoflow` package. It needs Go (see go.mod for the
version) and a C compiler for cgo.
"""

import os
import re
import shutil
import subprocess
from pathlib import Path

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent


def version() -> str:
    text = (ROOT / "torchbridge" / "version.go").read_text()
    return re.search(r'const Version = "([^"]+)"', text).group(1)


class BuildGo(build_py):
    """Copies the Python sources, then builds libneoflow.so next to them."""

    def run(self):
        super().run()
        go = shutil.which("go")
        if go is None:
            raise SystemExit("neoflow: building needs the Go toolchain on PATH (go.mod names the version)")
        out = Path(self.build_lib) / "neoflow" / "libneoflow.so"
        out.parent.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ, CGO_ENABLED="1")
        cmd = [go, "build", "-buildmode=c-shared", "-trimpath", "-o", str(out), "./capi"]
        print("neoflow:", " ".join(cmd), flush=True)
        subprocess.run(cmd, cwd=ROOT, env=env, check=True)
        header = out.with_suffix(".h")
        if header.exists():
            header.unlink()


class BinaryDistribution(Distribution):
    """The wheel carries a native library, so it is platform-specific."""

    def has_ext_modules(self):
        return True


setup(
    name="neoflow",
    version=version(),
    description="New tensor operators for PyTorch, written as index expressions and compiled by a Go core",
    python_requires=">=3.10",
    package_dir={"": "pyext"},
    packages=["neoflow", "neoflow._proto"],
    install_requires=["torch>=2.4", "protobuf>=4.21"],
    cmdclass={"build_py": BuildGo},
    distclass=BinaryDistribution,
    zip_safe=False,
)
