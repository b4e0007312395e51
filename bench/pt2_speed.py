#!/usr/bin/env python3
"""A model from Python trained three ways, one thread each, in one run
(docs/BENCHMARKS.md, section 15): PyTorch eager, the same module exported
with torch.export and trained through Skein's `pt2` model, and the same
module as TorchScript through the `torchscript` model (bench/program_step.cpp
times the two Skein ways). Each step: forward, cross-entropy, backward, SGD
with momentum; the median ms per step. The Skein ways run with glibc's
malloc tuned as `skein train` and sessions tune it (core/training/device/src/
malloc_tuning.cpp: mmap and trim thresholds of 1 GiB); PyTorch runs as is and
so tuned ("at its best", as in section 8). Each way in a process of its own.
With --zoo, the test suite's zoo (tests/python/zoo.py: models users bring,
exported in train mode, dropout on) instead, eager vs `pt2` only (section 19).
Needs PyPI's torch (build-pypi):

  ~/.cache/skein/torch-2.15.0/bin/python3 bench/pt2_speed.py [--build build-pypi] [--steps 200] [--rounds 3] [--zoo]
"""
import argparse, os, statistics, subprocess, sys, tempfile, time

import torch
from torch import nn

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "examples", "torchscript"))
from make_cnn import SmallCnn  # noqa: E402  the docs' example CNN


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(),
                                 nn.Linear(128, 10))

    def forward(self, x):
        return self.net(x)


class Transformer(nn.Module):
    """Two encoder layers (d_model 64, 4 heads) over [N, 32, 64] sequences."""

    def __init__(self):
        super().__init__()
        layer = nn.TransformerEncoderLayer(64, 4, 128, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.head = nn.Linear(64, 10)

    def forward(self, x):
        return self.head(self.encoder(x).mean(1))


MODELS = {"MLP 784-256-128-10": (Mlp, (1, 28, 28)), "CNN (the docs' example)": (SmallCnn, (1, 28, 28)),
          "Transformer, 2 encoder layers": (Transformer, (32, 64))}
BATCH, BATCHES = 64, 8
sys.path.insert(0, os.path.join(ROOT, "tests", "python"))
import zoo  # noqa: E402  the test suite's zoo

ZOO = {name: (make, shape, targets) for name, (make, shape, targets) in zoo.ZOO.items()}


def model_of(name):
    """The module and its batches' shape and targets (classes, or "lm")."""
    if name in ZOO:
        return ZOO[name]
    make, shape = MODELS[name]
    return make, shape, 10


def batches_of(name):
    make, shape, targets = model_of(name)
    if targets == "lm":
        tokens = torch.randint(0, zoo.TinyLm.VOCAB, (BATCHES, BATCH, zoo.TinyLm.CONTEXT + 1))
        return tokens[..., :-1].float(), tokens[..., 1:]
    return torch.randn(BATCHES, BATCH, *shape), torch.randint(0, targets, (BATCHES, BATCH))


def eager_ms(module, x, y, steps):
    opt = torch.optim.SGD(module.parameters(), lr=0.01, momentum=0.9)
    module.train()
    times = []
    for s in range(-len(x), steps):
        b = s % len(x)
        start = time.perf_counter()
        opt.zero_grad()
        zoo.loss_of(module(x[b]), y[b]).backward()
        opt.step()
        if s >= 0:
            times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


TUNED = {"MALLOC_MMAP_THRESHOLD_": str(1 << 30), "MALLOC_TRIM_THRESHOLD_": str(1 << 30)}


def eager_in_process(make_name, batches, steps, env):
    """eager_ms in a fresh process (glibc reads its malloc settings at start)."""
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--eager", make_name, batches, str(steps)],
                         env=env, check=True, capture_output=True, text=True).stdout
    return float(out.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build-pypi"))
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--zoo", action="store_true", help="the test suite's zoo, eager vs pt2")
    ap.add_argument("--eager", nargs=3, metavar=("MODEL", "BATCHES", "STEPS"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    torch.set_num_threads(1)
    if a.eager:  # the child of eager_in_process: the model's initial weights from the same seed
        torch.manual_seed(0)
        module = model_of(a.eager[0])[0]()
        data = torch.load(a.eager[1])
        print(eager_ms(module, data["x"], data["y"], int(a.eager[2])))
        return
    env = dict(os.environ, OMP_NUM_THREADS="1")
    step = os.path.join(a.build, "bin", "program_step")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in (ZOO if a.zoo else MODELS):
            torch.manual_seed(0)
            module = model_of(name)[0]()
            x, y = batches_of(name)
            pt2, script, batches = (os.path.join(tmp, f) for f in ("m.pt2", "m.pt", "b.pt"))
            dim = torch.export.Dim("batch")
            module.train()
            torch.export.save(torch.export.export(module, (x[0],), dynamic_shapes={"x": {0: dim}}), pt2)
            if not a.zoo:
                torch.jit.script(module).save(script)
            torch.save({"x": x, "y": y}, batches)
            times = {"eager": [], "eager_tuned": [], "pt2": [], "torchscript": []}
            for _ in range(a.rounds):  # interleaved, so that the machine's drift hits all alike
                times["eager"].append(eager_in_process(name, batches, a.steps, env))
                times["eager_tuned"].append(eager_in_process(name, batches, a.steps, dict(env, **TUNED)))
                for kind, path in (("pt2", pt2),) + ((("torchscript", script),) if not a.zoo else ()):
                    out = subprocess.run([step, kind, path, batches, str(a.steps)], env=dict(env, **TUNED),
                                         check=True, capture_output=True, text=True).stdout
                    times[kind].append(float(out))
            med = {k: statistics.median(v) for k, v in times.items() if v}
            best = min(med["eager"], med["eager_tuned"])  # eager at its best: as is or tuned, whichever is faster
            row = f"| {name} | {med['eager']:.2f} | {med['eager_tuned']:.2f} | {med['pt2']:.2f} | "
            if not a.zoo:
                row += f"{med['torchscript']:.2f} | "
            row += f"{best / med['pt2']:.2f}x |"
            if not a.zoo:
                row += f" {med['torchscript'] / med['pt2']:.2f}x |"
            rows.append(row)
            print(rows[-1], flush=True)
    header = "| model | PyTorch eager ms/step | PyTorch eager, malloc tuned | Skein `pt2` ms/step | "
    if a.zoo:
        print("\n" + header + "`pt2` speed vs eager at its best |\n|---|---|---|---|---|")
    else:
        print("\n" + header + "Skein `torchscript` ms/step | `pt2` speed vs eager at its best | "
              "`pt2` speed vs TorchScript |\n|---|---|---|---|---|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
