#!/usr/bin/env python3
"""A model from Python trained three ways, one thread each, in one run
(docs/BENCHMARKS.md, section 15): PyTorch eager, the same module exported
with torch.export and trained through Skein's `pt2` model, and the same
module as TorchScript through the `torchscript` model (bench/program_step.cpp
times the two Skein ways). Each step: forward, cross-entropy, backward, SGD
with momentum; the median ms per step. Needs PyPI's torch (build-pypi):

  ~/.cache/skein/torch-2.15.0/bin/python3 bench/pt2_speed.py [--build build-pypi] [--steps 200] [--rounds 3]
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


def eager_ms(module, x, y, steps):
    opt = torch.optim.SGD(module.parameters(), lr=0.01, momentum=0.9)
    module.train()
    times = []
    for s in range(-len(x), steps):
        b = s % len(x)
        start = time.perf_counter()
        opt.zero_grad()
        nn.functional.cross_entropy(module(x[b]), y[b]).backward()
        opt.step()
        if s >= 0:
            times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build-pypi"))
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    torch.set_num_threads(1)
    env = dict(os.environ, OMP_NUM_THREADS="1")
    step = os.path.join(a.build, "bin", "program_step")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, (make, shape) in MODELS.items():
            torch.manual_seed(0)
            module = make()
            x = torch.randn(BATCHES, BATCH, *shape)
            y = torch.randint(0, 10, (BATCHES, BATCH))
            pt2, script, batches = (os.path.join(tmp, f) for f in ("m.pt2", "m.pt", "b.pt"))
            dim = torch.export.Dim("batch")
            torch.export.save(torch.export.export(module, (x[0],), dynamic_shapes={"x": {0: dim}}), pt2)
            torch.jit.script(module).save(script)
            torch.save({"x": x, "y": y}, batches)
            state = {k: v.clone() for k, v in module.state_dict().items()}
            times = {"eager": [], "pt2": [], "torchscript": []}
            for _ in range(a.rounds):  # interleaved, so that the machine's drift hits all three alike
                module.load_state_dict(state)
                times["eager"].append(eager_ms(module, x, y, a.steps))
                for kind, path in (("pt2", pt2), ("torchscript", script)):
                    out = subprocess.run([step, kind, path, batches, str(a.steps)], env=env, check=True,
                                         capture_output=True, text=True).stdout
                    times[kind].append(float(out))
            med = {k: statistics.median(v) for k, v in times.items()}
            rows.append(f"| {name} | {med['eager']:.2f} | {med['pt2']:.2f} | {med['torchscript']:.2f} | "
                        f"{med['eager'] / med['pt2']:.2f}x | {med['torchscript'] / med['pt2']:.2f}x |")
            print(rows[-1], flush=True)
    print("\n| model | PyTorch eager ms/step | Skein `pt2` ms/step | Skein `torchscript` ms/step | "
          "`pt2` speed vs eager | `pt2` speed vs TorchScript |")
    print("|---|---|---|---|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
