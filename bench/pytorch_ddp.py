#!/usr/bin/env python3
"""The PyTorch side of bench/vs_pytorch.py section 9: examples/fashion_mnist_ddp.json
(an MLP on Fashion-MNIST, SGD with Nesterov momentum, batch 64 per process,
10% held out for validation) trained by PyTorch's own DistributedDataParallel
over Gloo on 2 processes of this machine (127.0.0.1), with a communication
hook as Skein's `compression`:

  python3 bench/pytorch_ddp.py --hidden [256,128] --epochs 3 --hook none|fp16|powersgd
      [--rank 4] [--warmup 100] [--world 2] [--limit N]

Rank 0 prints one JSON line per epoch ({"epoch", "dur"}: training and
validation, as Skein's `dur`) and last {"test_accuracy"}. Run it in a private
network namespace (bench/vs_pytorch.py does).
"""
import argparse, json, os, socket, time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.distributed.algorithms.ddp_comm_hooks import powerSGD_hook as powersgd

from pytorch_reference import fashion, mlp, read_idx, split, MEAN, STD, FASHION


def worker(rank, a, port):
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=a.world)
    torch.manual_seed(0)
    x, y = fashion(a.limit)
    (tx, ty), (vx, vy) = split(x, y)
    net = mlp(28 * 28, json.loads(a.hidden), 10, 0.1)
    if a.hook == "powersgd":
        # One gradient bucket. With two, powerSGD_hook's chained collectives
        # (P, then Q, per bucket) are issued in an order that differs between
        # the ranks, and Gloo aborts on the mismatched sizes (seen with torch
        # 1.13 on the wide MLP: "op.preamble.length <= op.nbytes").
        dist._DEFAULT_FIRST_BUCKET_BYTES = 1 << 30
        model = nn.parallel.DistributedDataParallel(net, bucket_cap_mb=1024)
    else:
        model = nn.parallel.DistributedDataParallel(net)
    if a.hook == "fp16":
        model.register_comm_hook(None, default_hooks.fp16_compress_hook)
    elif a.hook == "powersgd":
        state = powersgd.PowerSGDState(process_group=None, matrix_approximation_rank=a.rank,
                                       start_powerSGD_iter=a.warmup, min_compression_rate=2,
                                       use_error_feedback=True, warm_start=True)
        model.register_comm_hook(state, powersgd.powerSGD_hook)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True)
    loss_fn = nn.CrossEntropyLoss()
    for epoch in range(1, a.epochs + 1):
        start = time.perf_counter()
        model.train()
        g = torch.Generator().manual_seed(epoch)
        order = torch.randperm(len(tx), generator=g)[rank::a.world]  # this rank's share, as a DistributedSampler
        for i in range(0, len(order) - a.batch + 1, a.batch):
            idx = order[i:i + a.batch]
            opt.zero_grad()
            loss_fn(model(tx[idx]), ty[idx]).backward()
            opt.step()
        model.eval()
        with torch.no_grad():
            mine = torch.arange(rank, len(vx), a.world)
            correct = torch.tensor([(model(vx[mine]).argmax(1) == vy[mine]).sum().item()], dtype=torch.float64)
            dist.all_reduce(correct)
        dur = time.perf_counter() - start
        if rank == 0:
            print(json.dumps({"epoch": epoch, "dur": dur, "valid_acc": correct.item() / len(vx)}), flush=True)
    if rank == 0:
        test_x = (read_idx(f"{FASHION}/t10k-images-idx3-ubyte.gz", 0).to(torch.float32) / 255
                  - MEAN) / STD
        test_y = read_idx(f"{FASHION}/t10k-labels-idx1-ubyte.gz", 0).to(torch.int64)
        with torch.no_grad():
            acc = (model.module(test_x.unsqueeze(1)).argmax(1) == test_y).float().mean().item()
        print(json.dumps({"test_accuracy": acc}), flush=True)
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hidden", default="[256,128]")
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--hook", choices=["none", "fp16", "powersgd"], default="none")
    ap.add_argument("--rank", type=int, default=4)
    ap.add_argument("--warmup", type=int, default=100)
    ap.add_argument("--world", type=int, default=2)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--limit", type=int, default=0, help="first N training images (0: all)")
    spawn(worker, ap.parse_args())


def spawn(worker, a):
    """worker(rank, a, port) on a.world processes, rendezvous on a free port of loopback."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    mp.spawn(worker, args=(a, port), nprocs=a.world)


if __name__ == "__main__":
    main()
