#!/usr/bin/env python3
"""precision "32" vs "bf16-mixed" on Fashion-MNIST: training speed and test accuracy.

  python3 bench/precision.py [--build build] [--epochs 3]

Runs the cnn example (examples/fashion_mnist_cnn.json) and a wider MLP
(784-1024-1024-10, Adam) once per precision, interleaved, and prints a
Markdown table: samples/s of the epochs after the first (median) and the test
accuracy after the last epoch. Uses every core the machine has.
"""
import argparse, json, os, statistics, subprocess, sys, tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TRAIN_SAMPLES = 54000  # Fashion-MNIST train (60000) less valid_split 0.1

MODELS = {
    "cnn (examples/fashion_mnist_cnn.json)": os.path.join(ROOT, "examples/fashion_mnist_cnn.json"),
    "mlp 784-1024-1024-10": {
        "model": {"plugin": "mlp", "hidden": [1024, 1024]},
        "data": {"plugin": "idx"},
        "optimizer": {"plugin": "adam", "lr": 0.001},
        "batch_size": 64, "seed": 0, "valid_split": 0.1,
    },
}


def run(skein, config, precision, epochs, tmp, name):
    if isinstance(config, dict):
        path = os.path.join(tmp, name + ".json")
        with open(path, "w") as f:
            json.dump(config, f)
        config = path
    run_dir = os.path.join(tmp, f"{name}-{precision}")
    cmd = [skein, "train", "--config", config, "--run-dir", run_dir,
           "--set", f'precision="{precision}"', "--set", f"max_epochs={epochs}"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{r.stderr[-2000:]}")
    history = json.load(open(os.path.join(run_dir, "history.json")))
    results = json.load(open(os.path.join(run_dir, "results.json")))
    rates = [TRAIN_SAMPLES / e["train_dur"] if "train_dur" in e else TRAIN_SAMPLES / e["dur"] for e in history[1:]]
    return statistics.median(rates or [TRAIN_SAMPLES / history[0]["dur"]]), results["test_accuracy"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--epochs", type=int, default=3)
    args = ap.parse_args()
    skein = os.path.join(args.build, "bin/skein")
    print("| model | precision | samples/s | vs 32 | test accuracy |")
    print("|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for i, (label, config) in enumerate(MODELS.items()):
            got = {p: run(skein, config, p, args.epochs, tmp, f"m{i}") for p in ["32", "bf16-mixed"]}
            for p, (speed, acc) in got.items():
                print(f"| {label} | {p} | {speed:.0f} | {speed / got['32'][0]:.2f}x | {100 * acc:.2f}% |", flush=True)


if __name__ == "__main__":
    main()
