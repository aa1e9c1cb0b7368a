__version__ = "0.1.0"  # keep equal to torchbridge.Version (a Go test checks)

# The oldest PyTorch neoflow runs on (setup.py declares torch>=MIN_TORCH,<3;
# scripts/test-oldest-torch.sh tests it): 2.5 is the first with
# CustomOpDef.register_vmap, 2.6 the first whose functorch takes jacrev of
# jacrev of a custom op.
MIN_TORCH = "2.6"


def check_torch(version: str) -> None:
    """Raises ImportError, naming both versions, when PyTorch ``version`` is
    older than neoflow supports."""
    from torch.torch_version import TorchVersion

    if TorchVersion(str(version)) < MIN_TORCH:
        raise ImportError(
            f"neoflow {__version__} needs PyTorch >= {MIN_TORCH}, but PyTorch {version} is installed: "
            f"pip install 'torch>={MIN_TORCH}'"
        )
