#!/usr/bin/env python3
"""Where a step of ddp's fp16 compression spends its time (docs/BENCHMARKS.md,
section 9): Gloo all-reduce of a gradient bucket as float32 and as float16 on
2 processes over loopback, and the two casts, each the median of many
repetitions, with the same Gloo and libtorch that Skein links (Debian's
torch 1.13).

  unshare -rn sh -c 'ip link set lo up && python3 bench/allreduce_profile.py [--numel 235146]'

235146 is the example MLP's parameter count (0.94 MB of float32 gradients);
1863690 the wide MLP's.
"""
import argparse, json, socket, statistics, time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def timed(fn, reps, before=lambda: None):
    times = []
    for _ in range(reps):
        before()  # not timed
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def worker(rank, port, numel, reps):
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
    grads = torch.randn(numel) * 1e-3  # gradient-sized values
    flat = grads.clone()
    half = grads.half()
    out = {}
    # Each repetition reduces fresh gradients: summing a buffer into itself
    # again and again would reach inf in float16 within a few steps, and
    # non-finite values take other paths through the conversions.
    for name, t in [("all-reduce float32", flat), ("all-reduce float16", half)]:
        dist.barrier()
        out[name] = timed(lambda: dist.all_reduce(t), reps, before=lambda: t.copy_(grads))
    # float16 on the wire, summed in float32 here: an all-gather of every
    # rank's float16 buffer, then a vectorized cast and sum.
    gathered = [torch.empty_like(half) for _ in range(2)]
    def gather_and_sum():
        dist.all_gather(gathered, half)
        torch.sum(torch.stack(gathered).float(), 0, out=flat)
    dist.barrier()
    out["all-gather float16 + float32 sum"] = timed(gather_and_sum, reps, before=lambda: half.copy_(grads))
    out["cast float32 -> float16"] = timed(lambda: half.copy_(grads), reps)
    out["cast float16 -> float32"] = timed(lambda: flat.copy_(half), reps)
    if rank == 0:
        print(json.dumps({"numel": numel, "ms": out}))
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--numel", type=int, default=235146)
    ap.add_argument("--reps", type=int, default=200)
    a = ap.parse_args()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    mp.spawn(worker, args=(port, a.numel, a.reps), nprocs=2)


if __name__ == "__main__":
    main()
