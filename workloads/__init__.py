"""The NeoFlow paper's workloads, each as a plain-PyTorch baseline and a neoflow version."""
