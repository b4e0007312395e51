#!/usr/bin/env python3
"""Sharded optimizer state, measured (issue 37; docs/BENCHMARKS.md): Adam on
an MLP of ~57 M parameters (784-5120-5120-5120-10: its two large matrices
fall to different ranks, so each holds about half the state) on 2
processes, 1 thread each: Skein `ddp`, `zero` stage 1 and stage 2 against PyTorch's
DistributedDataParallel with torch.optim.Adam and with
ZeroRedundancyOptimizer (bench/pytorch_zero.py), the PyTorch of the Python
running this script (/usr/bin/python3 for Debian's build).

  /usr/bin/python3 bench/zero_memory.py [--build build] [--rounds 1] [--limit 2560]
      [--hidden [5120,5120,5120]] [--world 2] [--checkpoint] [--out FILE]

Each row: peak RSS of the largest rank (Skein: results.json's peak_rss_mb;
PyTorch: getrusage's ru_maxrss, the largest rank's) and training samples
per second of all ranks in the last of 2 epochs (Skein: the timer's
samples_per_s), the best of the rounds. --limit training images (no
validation split, no test split), batches of 64 per process. --checkpoint:
a checkpoint after every epoch (Skein's checkpoint callback; PyTorch's state
dicts saved by rank 0, ZeroRedundancyOptimizer's consolidated there first).
Runs in private network namespaces (unshare -rn).
"""
import argparse, json, os, sys, tempfile, time

from run import print_table, sh  # bench/run.py: a command with OMP_NUM_THREADS=1, in a private network if asked

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PY = sys.executable
SKEIN_ROWS = [("ddp", {"plugin": "ddp"}), ("zero stage 1", {"plugin": "zero", "stage": 1}),
              ("zero stage 2", {"plugin": "zero", "stage": 2})]
PYTORCH_ROWS = [("PyTorch DDP + Adam", "adam"), ("PyTorch DDP + ZeroRedundancyOptimizer", "zero")]


def skein_row(a, tmp, parallel):
    config = {"model": {"plugin": "mlp", "hidden": json.loads(a.hidden)},
              "data": {"plugin": "idx", "limit": a.limit, "test_images": "", "test_labels": ""},
              "optimizer": {"plugin": "adam", "lr": 1e-4}, "batch_size": 64, "max_epochs": 2,
              "valid_split": 0, "seed": 0, "history": {"plugin": "filestore"}, "parallel": parallel,
              "callbacks": [{"plugin": "timer"}] + ([{"plugin": "checkpoint"}] if a.checkpoint else [])}
    path = os.path.join(tmp, "config.json")
    with open(path, "w") as f:
        json.dump(config, f)
    run = os.path.join(tmp, "run" + str(time.monotonic_ns()))
    sh([f"{a.build}/bin/skein", "train", "--config", path, "--run-dir", run, "--nproc-per-node", str(a.world),
        "--timeout", "600"], netns=True)
    with open(os.path.join(run, "history.json")) as f:
        history = json.load(f)
    with open(os.path.join(run, "results.json")) as f:
        results = json.load(f)
    return results["peak_rss_mb"], history[-1]["samples_per_s"]


def pytorch_row(a, tmp, optimizer):
    checkpoint = ["--checkpoint", tmp] if a.checkpoint else []
    out = sh([PY, os.path.join(ROOT, "bench/pytorch_zero.py"), "--hidden", a.hidden, "--optimizer", optimizer,
              "--limit", str(a.limit), "--world", str(a.world)] + checkpoint, netns=True)
    r = json.loads(out.splitlines()[-1])
    return r["peak_rss_mb"], r["samples_per_s"], r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--limit", type=int, default=2560)
    ap.add_argument("--hidden", default="[5120,5120,5120]")
    ap.add_argument("--world", type=int, default=2)
    ap.add_argument("--checkpoint", action="store_true", help="a checkpoint after every epoch")
    ap.add_argument("--out")
    a = ap.parse_args()
    best = {}  # row -> (peak RSS MB, samples/s): the lowest and the highest of the rounds
    params = None
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(a.rounds):
            for name, parallel in SKEIN_ROWS:
                rss, rate = skein_row(a, tmp, parallel)
                old = best.get("Skein " + name, (rss, rate))
                best["Skein " + name] = (min(old[0], rss), max(old[1], rate))
            for name, optimizer in PYTORCH_ROWS:
                rss, rate, raw = pytorch_row(a, tmp, optimizer)
                params = raw["params"]
                old = best.get(name, (rss, rate))
                best[name] = (min(old[0], rss), max(old[1], rate))
    base = best["Skein ddp"][0]
    lines = [f"MLP {a.hidden} ({params / 1e6:.1f} M parameters), Adam, W={a.world}, {a.limit} images, "
             f"best of {a.rounds} round(s)" + (", a checkpoint every epoch" if a.checkpoint else ""), "",
             "| run | peak RSS per rank MB | vs Skein ddp | samples/s |", "|---|---|---|---|"]
    for name, (rss, rate) in best.items():
        lines.append(f"| {name} | {rss:.0f} | {100 * (rss / base - 1):+.0f} % | {rate:.1f} |")
    print_table("\n".join(lines), a.out)


if __name__ == "__main__":
    main()
