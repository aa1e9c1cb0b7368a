__version__ = "0.1.0"  # keep equal to torchbridge.Version (a Go test checks)
