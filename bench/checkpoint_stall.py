#!/usr/bin/env python3
"""What a checkpoint costs training (issue 53; docs/BENCHMARKS.md section 18):
each checkpoint written at once (rank 0 writes and fsyncs, every rank waits)
against `"checkpoint_background": true` (copied to memory at the step
boundary, written on a thread of its own), and no checkpoints at all.

  /usr/bin/python3 bench/checkpoint_stall.py [--build build] [--rounds 1] [--only ddp|zero|pytorch|example]...
      [--out FILE]

Rows:
- the wide MLP of section 12 (784-5120-5120-5120-10, 56.5 M parameters, Adam:
  ~680 MB of model and optimizer state), 2 processes of 1 thread, under
  `ddp` and `zero` (stage 1), --limit images, 3 epochs, a checkpoint after
  every epoch; beside it PyTorch DDP + Adam saving the same state with
  torch.save and fsync on rank 0 (bench/pytorch_zero.py --checkpoint --fsync);
- the example MLP (examples/fashion_mnist.json: 784-256-128-10, SGD) on real
  Fashion-MNIST, 1 process, 3 epochs, a checkpoint after every epoch.

The stall: results.json's checkpoint_stall_s (what each checkpoint held
training on the main rank; PyTorch: the same span timed around its save),
the median of a run's checkpoints. The epoch time: from one epoch's start to
the next, its `dur` (which a write in the background slows) plus the stall,
the median of the epochs after the first, each row against the same run
without checkpoints (same round). Runs in private network namespaces (unshare -rn).
"""
import argparse, json, os, statistics, sys, tempfile, time

from run import print_table, sh  # bench/run.py: a command with OMP_NUM_THREADS=1, in a private network if asked

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PY = sys.executable
WIDE = [5120, 5120, 5120]


def skein_run(a, tmp, config, world):
    path = os.path.join(tmp, "config.json")
    with open(path, "w") as f:
        json.dump(config, f)
    run = os.path.join(tmp, "run" + str(time.monotonic_ns()))
    cmd = [f"{a.build}/bin/skein", "train", "--config", path, "--run-dir", run, "--timeout", "900"]
    if world > 1:
        cmd += ["--nproc-per-node", str(world)]
    sh(cmd, netns=True)
    with open(os.path.join(run, "history.json")) as f:
        history = json.load(f)
    with open(os.path.join(run, "results.json")) as f:
        results = json.load(f)
    stalls = results.get("checkpoint_stall_s", [])
    stall = statistics.median(stalls) if stalls else 0.0
    # An epoch's `dur` ends before its checkpoint: the time from one epoch's
    # start to the next is both (a write in the background slows the next).
    return {"stall_s": stall, "epoch_s": statistics.median(e["dur"] for e in history[1:]) + stall}


def wide_config(a, parallel, checkpoint, background):
    return {"model": {"plugin": "mlp", "hidden": WIDE},
            "data": {"plugin": "idx", "limit": a.limit, "test_images": "", "test_labels": ""},
            "optimizer": {"plugin": "adam", "lr": 1e-4}, "batch_size": 64, "max_epochs": 3,
            "valid_split": 0, "seed": 0, "history": {"plugin": "filestore"}, "parallel": parallel,
            "checkpoint_background": background,
            "callbacks": [{"plugin": "checkpoint"}] if checkpoint else []}


def example_config(checkpoint, background):
    with open(os.path.join(ROOT, "examples/fashion_mnist.json")) as f:
        config = json.load(f)
    config["max_epochs"] = 3
    config["checkpoint_background"] = background
    config["callbacks"] = [{"plugin": "checkpoint"}] if checkpoint else []
    return config


def pytorch_stall(a, tmp):
    out = sh([PY, os.path.join(ROOT, "bench/pytorch_zero.py"), "--hidden", json.dumps(WIDE), "--optimizer", "adam",
              "--epochs", "3", "--limit", str(a.limit), "--world", "2", "--checkpoint", tmp, "--fsync"], netns=True)
    return statistics.median(json.loads(out.splitlines()[-1])["checkpoint_s"])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--limit", type=int, default=2560)
    ap.add_argument("--only", choices=["ddp", "zero", "pytorch", "example"], action="append",
                    help="only these rows (repeatable; default: all)")
    ap.add_argument("--out")
    a = ap.parse_args()
    want = lambda row: not a.only or row in a.only
    rows = []  # (model, how, stall s, epoch s, epoch s without checkpoints)
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(a.rounds):
            for name, parallel in [("ddp", {"plugin": "ddp"}), ("zero", {"plugin": "zero", "stage": 1})]:
                if not want(name):
                    continue
                none = skein_run(a, tmp, wide_config(a, parallel, False, False), 2)
                for how, background in [("at once", False), ("background", True)]:
                    r = skein_run(a, tmp, wide_config(a, parallel, True, background), 2)
                    rows.append((f"wide MLP, Adam, {name}, W=2", how, r["stall_s"], r["epoch_s"], none["epoch_s"]))
            if want("pytorch"):
                rows.append(("wide MLP, Adam, PyTorch DDP, W=2", "torch.save + fsync", pytorch_stall(a, tmp), None, None))
            if not want("example"):
                continue
            none = skein_run(a, tmp, example_config(False, False), 1)
            for how, background in [("at once", False), ("background", True)]:
                r = skein_run(a, tmp, example_config(True, background), 1)
                rows.append(("example MLP, SGD, 1 process", how, r["stall_s"], r["epoch_s"], none["epoch_s"]))
    lines = ["| model | checkpoint | stall per checkpoint | epoch with a checkpoint each | without | change |",
             "|---|---|---|---|---|---|"]
    for model, how, stall, epoch, without in rows:
        if epoch is None:
            lines.append(f"| {model} | {how} | {stall:.3f} s | | | |")
        else:
            lines.append(f"| {model} | {how} | {stall:.3f} s | {epoch:.2f} s | {without:.2f} s | "
                         f"{100 * (epoch / without - 1):+.1f} % |")
    print_table("\n".join(lines), a.out)


if __name__ == "__main__":
    main()
