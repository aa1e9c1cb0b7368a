"""Where a workload's training step spends its time on the GPU (or the CPU): torch.profiler over a
few steps of the eager model and of the neoflow model, the kernels sorted by
total device time (neoflow's own kernels appear under their generated names).

    python bench/gpu_profile.py shufflenet --batch 64 [--steps 5] [--top 15]
"""

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import workloads_module  # noqa: E402

wl = workloads_module.load()


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("workload", choices=wl.WORKLOADS)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--size", default="bench", choices=["small", "bench"])
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--top", type=int, default=15)
    ap.add_argument("--device", default="cuda", choices=["cpu", "cuda"])
    args = ap.parse_args(argv)
    import neoflow
    import torch
    from torch.profiler import ProfilerActivity, profile

    cuda = args.device == "cuda"
    if cuda and not torch.cuda.is_available():
        raise SystemExit("gpu_profile: no CUDA GPU here (--device cpu profiles the CPU)")
    sync = torch.cuda.synchronize if cuda else lambda: None
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    sort = "device_time_total" if cuda else "cpu_time_total"
    base, nf, loss, lr, _ = wl.setup(args.workload, args.size, args.batch, torch.float32, torch, args.device)
    for name, model in (("eager", base), ("neoflow", nf)):
        step = wl.train_step(torch, model, lambda m=model: loss(m), lr)
        for _ in range(3):
            step()
        if name == "neoflow":
            neoflow.wait_background(timeout=120)
            step()
        sync()
        with profile(activities=activities) as prof:
            for _ in range(args.steps):
                step()
            sync()
        print(f"== {args.workload} batch {args.batch} {name}: {args.steps} steps")
        print(prof.key_averages().table(sort_by=sort, row_limit=args.top, max_name_column_width=60))


if __name__ == "__main__":
    main()
