"""Builds neoflow: the Go core as a c-shared library, plus the Python package.

`pip install .` runs `go build -buildmode=c-shared ./capi` and installs the
library inside the `neoflow` package. It needs Go (see go.mod for the
version) and a C compiler for cgo.

Where CUDA's driver header and link stub are found, it also builds the CUDA
variant, libneoflow_cuda.so (`go build -tags cuda`), which the package loads
instead when torch.cuda.is_available(). It looks, in order, at
NEOFLOW_CUDA_INCLUDE and NEOFLOW_CUDA_LIB (the directories of cuda.h and
libcuda.so), NEOFLOW_CUDA_DEV (a directory with include/ and lib/, as
scripts/cuda-dev.sh makes), ~/.cache/neoflow/cuda-dev (cuda-dev.sh's
default), CUDA_HOME, CUDA_PATH, /usr/local/cuda and /usr. No GPU is
needed to build it. NEOFLOW_BUILD_CUDA=0 skips the CUDA variant; =1 makes
a missing header an error.
"""

import os
import re
import shutil
import subprocess
from pathlib import Path

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py

try:
    from setuptools.command.bdist_wheel import bdist_wheel
except ImportError:  # setuptools < 70.1
    from wheel.bdist_wheel import bdist_wheel

ROOT = Path(__file__).resolve().parent


def version() -> str:
    text = (ROOT / "torchbridge" / "version.go").read_text()
    return re.search(r'const Version = "([^"]+)"', text).group(1)


def cuda_dirs() -> tuple[Path, Path] | None:
    """The directories of cuda.h and of libcuda.so (or its stub), if found."""
    env = os.environ
    candidates = []
    if env.get("NEOFLOW_CUDA_INCLUDE") or env.get("NEOFLOW_CUDA_LIB"):
        candidates.append((env.get("NEOFLOW_CUDA_INCLUDE", ""), [env.get("NEOFLOW_CUDA_LIB", "")]))
    default_dev = Path.home() / ".cache" / "neoflow" / "cuda-dev"
    for dev in (env.get("NEOFLOW_CUDA_DEV"), str(default_dev)):
        if dev:
            candidates.append((f"{dev}/include", [f"{dev}/lib"]))
    for home in (env.get("CUDA_HOME"), env.get("CUDA_PATH"), "/usr/local/cuda"):
        if home:
            libs = [f"{home}/lib64/stubs", f"{home}/lib64", f"{home}/targets/x86_64-linux/lib/stubs"]
            candidates.append((f"{home}/include", libs))
    candidates.append(("/usr/include", ["/usr/lib/x86_64-linux-gnu/stubs", "/usr/lib/x86_64-linux-gnu"]))
    for inc, libs in candidates:
        for lib in libs:
            if inc and lib and (Path(inc) / "cuda.h").is_file() and (Path(lib) / "libcuda.so").exists():
                return Path(inc), Path(lib)
    return None


class BuildGo(build_py):
    """Copies the Python sources, then builds libneoflow.so (and
    libneoflow_cuda.so where CUDA headers are found) next to them."""

    def run(self):
        super().run()
        go = shutil.which("go")
        if go is None:
            raise SystemExit("neoflow: building needs the Go toolchain on PATH (go.mod names the version)")
        pkg = Path(self.build_lib) / "neoflow"
        pkg.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ, CGO_ENABLED="1")
        self._build(go, pkg / "libneoflow.so", [], env)
        mode = os.environ.get("NEOFLOW_BUILD_CUDA", "").strip()
        if mode == "0":
            print("neoflow: NEOFLOW_BUILD_CUDA=0: building the CPU-only library", flush=True)
            return
        dirs = cuda_dirs()
        if dirs is None:
            msg = (
                "neoflow: CUDA headers not found (cuda.h and libcuda.so under NEOFLOW_CUDA_INCLUDE/NEOFLOW_CUDA_LIB, "
                "NEOFLOW_CUDA_DEV, CUDA_HOME, /usr/local/cuda or /usr); building the CPU-only library. "
                "scripts/cuda-dev.sh fetches them on Debian."
            )
            if mode == "1":
                raise SystemExit(msg.replace("building the CPU-only library", "NEOFLOW_BUILD_CUDA=1 requires them"))
            print(msg, flush=True)
            return
        inc, lib = dirs
        print(f"neoflow: CUDA headers in {inc}, libcuda in {lib}: building the CUDA variant too", flush=True)
        cuda_env = dict(
            env,
            CGO_CFLAGS=f"{env.get('CGO_CFLAGS', '')} -I{inc}".strip(),
            CGO_LDFLAGS=f"{env.get('CGO_LDFLAGS', '')} -L{lib}".strip(),
        )
        self._build(go, pkg / "libneoflow_cuda.so", ["-tags", "cuda"], cuda_env)

    @staticmethod
    def _build(go: str, out: Path, flags: list[str], env: dict) -> None:
        cmd = [go, "build", "-buildmode=c-shared", "-trimpath", *flags, "-o", str(out), "./capi"]
        print("neoflow:", " ".join(cmd), flush=True)
        subprocess.run(cmd, cwd=ROOT, env=env, check=True)
        header = out.with_suffix(".h")
        if header.exists():
            header.unlink()


class PlatformWheel(bdist_wheel):
    """The library is loaded with ctypes, not imported as an extension module,
    so one wheel serves every CPython 3 on its platform: py3-none-<platform>."""

    def get_tag(self):
        return ("py3", "none", super().get_tag()[2])


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
    install_requires=["torch>=2.4", "protobuf>=4.21", "tqdm>=4.60"],
    extras_require={"bench": ["matplotlib"], "test": ["pytest", "hypothesis"]},
    entry_points={
        "console_scripts": ["neoflow = neoflow.cli:main"],
        "torch_dynamo_backends": ["neoflow = neoflow.backend:backend"],
    },
    cmdclass={"build_py": BuildGo, "bdist_wheel": PlatformWheel},
    distclass=BinaryDistribution,
    zip_safe=False,
)
