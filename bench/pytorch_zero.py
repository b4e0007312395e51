#!/usr/bin/env python3
"""The PyTorch side of bench/zero_memory.py: an MLP trained with Adam on the
first --limit Fashion-MNIST images by PyTorch's DistributedDataParallel over
Gloo on --world processes of this machine (127.0.0.1), with torch.optim.Adam
on every rank or with ZeroRedundancyOptimizer (Adam's state sharded):

  python3 bench/pytorch_zero.py --hidden [5120,5120,5120] --optimizer adam|zero
      [--epochs 2] [--limit 2560] [--batch 64] [--world 2] [--checkpoint DIR [--fsync]]

--checkpoint DIR: after each epoch rank 0 saves the model's and the
optimizer's state dicts to DIR/checkpoint.pt (ZeroRedundancyOptimizer's
consolidated on rank 0 first: consolidate_state_dict(to=0)), as Skein's
checkpoint callback does.

Prints one JSON line: {"params", "samples_per_s" (all ranks, the last
epoch's training), "peak_rss_mb" (the largest rank's), "optimizer_state_mb"
(the largest rank's), "checkpoint_s" (what each checkpoint held training:
consolidation, save, fsync with --fsync, the barrier after)}. Run it in a private network namespace
(bench/zero_memory.py does).
"""
import argparse, json, os, resource, time

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.optim import ZeroRedundancyOptimizer

from pytorch_ddp import spawn
from pytorch_reference import fashion, mlp


def largest(value):
    t = torch.tensor([float(value)], dtype=torch.float64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return t.item()


def worker(rank, a, port):
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=a.world)
    torch.manual_seed(0)
    x, y = fashion(a.limit)
    model = nn.parallel.DistributedDataParallel(mlp(28 * 28, json.loads(a.hidden), 10, 0))
    if a.optimizer == "zero":
        opt = ZeroRedundancyOptimizer(model.parameters(), optimizer_class=torch.optim.Adam, lr=1e-4)
        local = opt.optim
    else:
        opt = local = torch.optim.Adam(model.parameters(), lr=1e-4)
    loss_fn = nn.CrossEntropyLoss()
    rate = 0.0
    checkpoint_s = []  # what each checkpoint held training (rank 0's view)
    for epoch in range(1, a.epochs + 1):
        order = torch.randperm(len(x), generator=torch.Generator().manual_seed(epoch))[rank::a.world]
        dist.barrier()
        start, seen = time.perf_counter(), 0
        for i in range(0, len(order) - a.batch + 1, a.batch):
            idx = order[i:i + a.batch]
            opt.zero_grad()
            loss_fn(model(x[idx]), y[idx]).backward()
            opt.step()
            seen += len(idx)
        rate = seen * a.world / largest(time.perf_counter() - start)
        if a.checkpoint:
            held = time.perf_counter()
            if a.optimizer == "zero":
                opt.consolidate_state_dict(to=0)
            if rank == 0:
                path = os.path.join(a.checkpoint, "checkpoint.pt")
                torch.save({"model": model.module.state_dict(), "optimizer": opt.state_dict()}, path)
                if a.fsync:  # as Skein's checkpoints are: on disk before training goes on
                    with open(path, "rb") as f:
                        os.fsync(f.fileno())
            dist.barrier()
            checkpoint_s.append(time.perf_counter() - held)
    state_bytes = sum(t.numel() * t.element_size() for s in local.state.values() for t in s.values()
                      if torch.is_tensor(t))
    result = {"params": sum(p.numel() for p in model.parameters()), "samples_per_s": rate,
              "peak_rss_mb": largest(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
              "optimizer_state_mb": largest(state_bytes / 2**20), "checkpoint_s": checkpoint_s}
    if rank == 0:
        print(json.dumps(result), flush=True)
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hidden", default="[5120,5120,5120]")
    ap.add_argument("--optimizer", choices=["adam", "zero"], default="adam")
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--limit", type=int, default=2560, help="first N training images")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--world", type=int, default=2)
    ap.add_argument("--checkpoint", help="a directory: save a checkpoint there after each epoch")
    ap.add_argument("--fsync", action="store_true", help="fsync each checkpoint before training goes on")
    spawn(worker, ap.parse_args())


if __name__ == "__main__":
    main()
