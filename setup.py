"""Builds neoflow: the Go core as a c-shared library, plus the Python package.

`pip install .` (or of the sdist) runs `go build -buildmode=c-shared ./capi`
and installs the library inside the `neoflow` package. It needs Go (the
version go.mod names) and a C compiler for cgo; a wheel needs neither.

It also builds the CUDA variant, libneoflow_cuda.so (`go build -tags cuda`),
which the package loads instead when torch.cuda.is_available(). That needs
only cuda.h, no GPU, driver or toolkit: it is taken from NEOFLOW_CUDA_INCLUDE,
CUDA_HOME, CUDA_PATH or /usr/local/cuda, else from the nvidia-cuda-runtime-cu12
package that pyproject.toml lists among the build requirements (CUDA 12 headers:
the library then runs on every driver since CUDA 12.0). The library links
against libcuda.so.1, the driver; where no link stub sits beside the header
(NEOFLOW_CUDA_LIB names one), a stub is generated from cuda.h's declarations.
NEOFLOW_BUILD_CUDA=0 skips the CUDA variant; =1 makes a missing header an error.

CC, CGO_CFLAGS and CGO_LDFLAGS reach cgo as usual: scripts/build-wheel.sh sets
CC to scripts/manylinux-cc for a wheel that runs on glibc 2.17 and later.
"""

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent


def version() -> str:
    text = (ROOT / "torchbridge" / "version.go").read_text()
    return re.search(r'const Version = "([^"]+)"', text).group(1)


def min_torch() -> str:
    """The oldest PyTorch neoflow runs on (MIN_TORCH in pyext/neoflow/version.py)."""
    text = (ROOT / "pyext" / "neoflow" / "version.py").read_text()
    return re.search(r'^MIN_TORCH = "([^"]+)"', text, re.M).group(1)


def go_version() -> str:
    """The Go version go.mod names."""
    return re.search(r"^go (\S+)", (ROOT / "go.mod").read_text(), re.M).group(1)


def cuda_include() -> Path | None:
    """The directory of cuda.h, if found."""
    env = os.environ
    dirs = [env.get("NEOFLOW_CUDA_INCLUDE")]
    dirs += [f"{h}/include" for h in (env.get("CUDA_HOME"), env.get("CUDA_PATH"), "/usr/local/cuda") if h]
    dirs += [f"{p}/nvidia/cuda_runtime/include" for p in sys.path if p]
    for d in dirs:
        if d and (Path(d) / "cuda.h").is_file():
            return Path(d)
    return None


def cuda_lib(include: Path, build_temp: Path, cc: list[str]) -> Path:
    """A directory with libcuda.so to link against: NEOFLOW_CUDA_LIB, the
    toolkit's stub beside the header, else a stub made from cuda.h."""
    given = os.environ.get("NEOFLOW_CUDA_LIB")
    if given:
        if not (Path(given) / "libcuda.so").exists():
            raise SystemExit(f"neoflow: NEOFLOW_CUDA_LIB={given} holds no libcuda.so")
        return Path(given)
    home = include.parent
    for d in (home / "lib64" / "stubs", home / "targets" / "x86_64-linux" / "lib" / "stubs"):
        if (d / "libcuda.so").exists():
            return d
    return libcuda_stub(include, build_temp / "cuda-stub", cc)


def libcuda_stub(include: Path, out: Path, cc: list[str]) -> Path:
    """Builds out/libcuda.so, soname libcuda.so.1, with an empty function for
    every cu* function cuda.h declares (under the names its macros pick, such
    as cuMemAlloc_v2). It is only linked against: at run time the driver's
    libcuda.so.1 is loaded."""
    out.mkdir(parents=True, exist_ok=True)
    pre = subprocess.run([*cc, "-E", "-P", f"-I{include}", str(include / "cuda.h")], capture_output=True, text=True)
    if pre.returncode != 0:
        raise SystemExit(f"neoflow: preprocessing {include / 'cuda.h'} failed:\n{pre.stderr}")
    names = sorted(set(re.findall(r"\b(cu[A-Z]\w*)\s*\(", pre.stdout)))
    if not names:
        raise SystemExit(f"neoflow: {include / 'cuda.h'} declares no cu* functions")
    (out / "stub.c").write_text("".join(f"void {n}(void) {{}}\n" for n in names))
    cmd = [*cc, "-shared", "-fPIC", "-Wl,-soname,libcuda.so.1", "-o", str(out / "libcuda.so"), str(out / "stub.c")]
    subprocess.run(cmd, check=True)
    print(f"neoflow: libcuda.so link stub with {len(names)} functions from {include / 'cuda.h'}", flush=True)
    return out


class BuildGo(build_py):
    """Copies the Python sources, then builds libneoflow.so (and
    libneoflow_cuda.so where CUDA headers are found) next to them."""

    def run(self):
        go = shutil.which("go")
        if go is None:
            raise SystemExit(
                f"neoflow: building from source needs Go {go_version()} or newer on PATH, and a C compiler for cgo. "
                "The wheel needs neither: pip install --only-binary neoflow neoflow"
            )
        super().run()
        pkg = Path(self.build_lib) / "neoflow"
        pkg.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ, CGO_ENABLED="1")
        self._build(go, pkg / "libneoflow.so", [], env)
        mode = os.environ.get("NEOFLOW_BUILD_CUDA", "").strip()
        if mode == "0":
            print("neoflow: NEOFLOW_BUILD_CUDA=0: building the CPU-only library", flush=True)
            return
        inc = cuda_include()
        if inc is None:
            msg = (
                "neoflow: cuda.h not found (NEOFLOW_CUDA_INCLUDE, CUDA_HOME, CUDA_PATH, /usr/local/cuda or the "
                "nvidia-cuda-runtime-cu12 build requirement); building the CPU-only library"
            )
            if mode == "1":
                raise SystemExit(msg.replace("building the CPU-only library", "NEOFLOW_BUILD_CUDA=1 requires it"))
            print(msg, flush=True)
            return
        cc = shlex.split(env.get("CC") or "cc")
        lib = cuda_lib(inc, Path(self.get_finalized_command("build").build_temp).resolve(), cc)
        print(f"neoflow: cuda.h in {inc}, libcuda.so in {lib}: building the CUDA variant too", flush=True)
        cuda_env = dict(
            env,
            CGO_CFLAGS=f"{env.get('CGO_CFLAGS', '')} -I{inc}".strip(),
            CGO_LDFLAGS=f"{env.get('CGO_LDFLAGS', '')} -L{lib}".strip(),
        )
        self._build(go, pkg / "libneoflow_cuda.so", ["-tags", "cuda"], cuda_env)

    @staticmethod
    def _build(go: str, out: Path, flags: list[str], env: dict) -> None:
        # -s -w: no symbol table or DWARF (a quarter of the size); Go's
        # panics still print their stacks.
        cmd = [go, "build", "-buildmode=c-shared", "-trimpath", "-ldflags=-s -w", *flags, "-o", str(out), "./capi"]
        print("neoflow:", shlex.join(cmd), flush=True)
        subprocess.run(cmd, cwd=ROOT, env=env, check=True)
        header = out.with_suffix(".h")
        if header.exists():
            header.unlink()


# The launch's hot path (neoflow._launch) is an extension module of Python's limited API, and the Go library
# is loaded with ctypes: one wheel serves every CPython from 3.10 on its platform, cp310-abi3-<platform>.
LAUNCH = Extension(
    "neoflow._launch",
    ["pyext/neoflow/_launch.c", "pyext/neoflow/_launch_calls.c"],
    depends=["pyext/neoflow/_launch.h"],
    py_limited_api=True,  # (the sources define Py_LIMITED_API)
    extra_compile_args=["-O2", "-fvisibility=hidden"],  # the module exports its init function only
    extra_link_args=["-s"],  # stripped, as the Go libraries are
)


CLASSIFIERS = [
    "Development Status :: 3 - Alpha",
    "Environment :: GPU :: NVIDIA CUDA :: 12",
    "Intended Audience :: Developers",
    "Intended Audience :: Science/Research",
    "Operating System :: POSIX :: Linux",
    "Programming Language :: Go",
    "Programming Language :: Python :: 3",
    "Programming Language :: Python :: 3 :: Only",
    "Programming Language :: Python :: 3.10",
    "Programming Language :: Python :: 3.11",
    "Programming Language :: Python :: 3.12",
    "Programming Language :: Python :: 3.13",
    "Topic :: Scientific/Engineering :: Artificial Intelligence",
    "Topic :: Software Development :: Code Generators",
    "Topic :: Software Development :: Compilers",
]

setup(
    name="neoflow",
    version=version(),
    description="New tensor operators for PyTorch, written as index expressions and compiled by a Go core",
    long_description=(ROOT / "README.md").read_text(encoding="utf-8"),
    long_description_content_type="text/markdown",
    license_expression="MIT",
    license_files=["LICENSE"],
    classifiers=CLASSIFIERS,
    keywords=["pytorch", "compiler", "tensor", "operator", "autodiff", "cuda", "kernel"],
    python_requires=">=3.10",
    package_dir={"": "pyext"},
    packages=["neoflow", "neoflow._proto", "neoflow.backend"],
    # torch: from MIN_TORCH (pyext/neoflow/version.py says why); below 3
    # because the backend uses torch._dynamo's and torch._guards' internals.
    install_requires=[f"torch>={min_torch()},<3", "protobuf>=4.21", "tqdm>=4.60"],
    extras_require={
        "bench": ["matplotlib"],
        "test": ["pytest", "hypothesis"],
        "docs": ["mkdocs>=1.6", "mkdocstrings[python]>=0.26"],
    },
    entry_points={
        "console_scripts": ["neoflow = neoflow.cli:main"],
        "torch_dynamo_backends": ["neoflow = neoflow.backend:backend"],
    },
    ext_modules=[LAUNCH],
    cmdclass={"build_py": BuildGo},
    options={"bdist_wheel": {"py_limited_api": "cp310"}},
    zip_safe=False,
)
