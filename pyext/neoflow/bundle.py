"""Kernel bundles: the compiled kernels of one process, for another that
has no C compiler.

``neoflow.bundle.save(path)`` writes every C kernel this process has run
(forward and gradient kernels of every op, for the shapes used), the
tuning records that chose their schedules and the fusion rates they were
fused with into one file with a manifest (neoflow version, target CPU and
compiler flags, a SHA-256 per file). In another process,
``NEOFLOW_BUNDLE=path`` or ``neoflow.bundle.load(path)`` makes neoflow load
those kernels instead of compiling them: run the training script once
where a compiler is, save, and ship the bundle with the script to compute
nodes without one. A kernel the bundle lacks (new shapes, another op) is
compiled as usual, which fails with a clear error where no compiler is.

A bundle is refused, with an error that says why, when it was made by
another neoflow version, for another CPU (kernels are built with
``-march=native``) or with other compiler flags (NEOFLOW_CFLAGS), or when
any file in it does not match its checksum. CUDA kernels are not bundled:
NVRTC, which compiles them, ships with PyTorch's CUDA wheels.
"""

from __future__ import annotations

import json
import os
import warnings

from . import _lib, config
from ._proto import neoflow_pb2 as pb


def save(path) -> dict:
    """Writes the bundle of this process's kernels to ``path`` (replacing
    it atomically) and returns its manifest, with ``"kernels"`` listing
    each kernel's op and key."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a str or os.PathLike, got {type(path).__name__}")
    config.ensure()
    target = os.path.abspath(os.path.expanduser(os.fspath(path)))
    resp = _lib.call_interruptible(
        "nf_bundle_save", pb.BundleSaveRequest(path=target), pb.BundleSaveResponse, label="neoflow: writing bundle"
    )
    for w in resp.warnings:
        warnings.warn(w, RuntimeWarning, stacklevel=2)
    manifest = json.loads(resp.manifest)
    manifest["kernels"] = manifest.get("kernels") or []  # a bundle of no kernels lists none
    return manifest


def load(path) -> dict:
    """Uses the bundle at ``path`` from now on (``configure(bundle=path)``):
    checks it, imports its tuning records into the tuning database and
    returns ``{"kernels": n, "records": m}``. Kernels this process built
    before stay in use."""
    config.configure(bundle=path)
    kernels, records = config.bundle_info()
    return {"kernels": kernels, "records": records}
