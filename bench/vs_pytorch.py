#!/usr/bin/env python3
"""Skein against plain PyTorch, model family by family, in one interleaved run
(docs/BENCHMARKS.md, sections 8 and 9).

  /usr/bin/python3 bench/vs_pytorch.py [--build build] [--rounds 2] [--epochs 3]
  ~/.cache/skein/torch-2.15.0/bin/python3 bench/vs_pytorch.py --build build-pypi ...
      [--limit 10000] [--only speed|allocators|ddp] [--out FILE]
      [--device cpu|cuda|cuda:N] [--rows NAME,...] [--data DIR] [--no-netns]
      [--only ddp --links 1gbit,10gbit --ddp-limit 20000]

Section 8 (speed): each family trained by `skein train` (default settings,
and with SKEIN_MALLOC=system: glibc's malloc untuned) and by
bench/pytorch_reference.py (the PyTorch of the Python running this script, 1 thread: as is, and
with glibc's malloc tuned through MALLOC_MMAP_THRESHOLD_ and
MALLOC_TRIM_THRESHOLD_, "PyTorch at its best"). Seconds per epoch are the
median of epochs 2+ over the rounds; peak RSS the largest seen.

Section 9 (ddp): Skein `ddp` on 2 processes with compression none, fp16 and
powersgd against PyTorch DDP (gloo) with no hook, fp16_compress_hook and
powerSGD_hook at the same rank and warm-up, on the example MLP and the wide
MLP: samples/s of epochs 2+ and test accuracy. With --links (section 13),
the wide MLP's rows on loopback shaped by tc's token bucket to each rate
(bench/run.py's shaped(): the private network namespace's lo), both sides
alike.

With --device, both sides train on that device: Skein with `--set
device=...`, PyTorch with the model on it and each batch copied there from
pinned memory (non_blocking), as Skein's prefetcher does; the speed table then
has Skein and PyTorch only (the malloc variants concern the host). Without it,
Skein runs on the trainer's default device and PyTorch on the CPU.
scripts/gpu-check.sh runs `--only speed --device cuda` on a GPU machine.
--rows keeps the families whose names contain one of the comma-separated
words (no other data is made); --data is Fashion-MNIST's directory;
--no-netns runs skein without a private network namespace (unshare), for
machines that have none to give and reach nothing anyway.

Allocators: the conv families under Skein's tuned glibc malloc, glibc's
defaults, jemalloc and tcmalloc (LD_PRELOAD).

Needs python3-torchvision (the image_folder row) and libjemalloc2,
libtcmalloc-minimal4 (allocators): `scripts/setup.sh --bench` installs them.
"""
import argparse, json, os, statistics, subprocess, sys, tempfile, time

from run import sh  # bench/run.py: a command with OMP_NUM_THREADS=1, in a private network if asked

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# PyTorch of the same version as the build's libtorch: the Python running this
# script (/usr/bin/python3 for Debian's build, the venv's python3 for
# SKEIN_TORCH=pypi's build-pypi/).
PY = sys.executable
FASHION = "/usr/share/datasets/fashion-mnist"
NETNS = True  # --no-netns: False
TUNED_GLIBC = {"MALLOC_MMAP_THRESHOLD_": str(1 << 30), "MALLOC_TRIM_THRESHOLD_": str(1 << 30)}


def skein_run(b, args, tmp, env=None, link=None):
    run = os.path.join(tmp, "run" + str(time.monotonic_ns()))
    sh([f"{b}/bin/skein", "train", "--run-dir", run] + args, env=env, netns=NETNS or link is not None, link=link)
    with open(os.path.join(run, "history.json")) as f:
        history = json.load(f)
    with open(os.path.join(run, "results.json")) as f:
        results = json.load(f)
    return history, results


def python_run(family, extra, env=None):
    lines = [json.loads(l) for l in sh([PY, os.path.join(ROOT, "bench/pytorch_reference.py"), family] + extra,
                                       env=env).splitlines()]
    return lines[:-1], lines[-1]["peak_rss_mb"]


def make_tabular_csv(path, rows=60000, features=32, classes=5):
    import numpy as np
    rng = np.random.default_rng(0)
    x = rng.normal(size=(rows, features)).astype(np.float32)
    w = rng.normal(size=(features, classes))
    y = np.argmax(x @ w + rng.normal(scale=2.0, size=(rows, classes)), axis=1)
    header = ",".join([f"f{i}" for i in range(features)] + ["label"])
    np.savetxt(path, np.column_stack([x, y]), delimiter=",", header=header, comments="",
               fmt=["%.6f"] * features + ["%d"])


def families(b, tmp, limit, epochs, device=None, data=FASHION, wanted=None):
    """name -> (skein args, pytorch_reference args), for the names containing
    one of `wanted` (all when None); only their data is made."""
    def want(name):
        return wanted is None or any(w in name for w in wanted)

    mlp = os.path.join(ROOT, "examples/fashion_mnist.json")
    common = ["--set", f"max_epochs={epochs}", "--set", "callbacks=[]", "--set", "valid_split=0.1", "--set", "seed=0"]
    if device:
        common += ["--set", f"device={device}"]
    limited = ["--set", f"data.limit={limit}", "--set", f"data.dir={data}"]
    py = ["--epochs", str(epochs), "--limit", str(limit), "--data", data] + (["--device", device] if device else [])
    rows = {
        "example MLP 784-256-128-10": (["--config", mlp] + common + limited, ["mlp"] + py),
        "wide MLP 784-1024-1024-10": (["--config", mlp, "--set", "model.hidden=[1024,1024]"] + common + limited,
                                      ["wide_mlp"] + py),
        "bundled cnn [16, 32]": (["--config", os.path.join(ROOT, "examples/fashion_mnist_cnn.json")] + common + limited,
                                 ["cnn"] + py),
    }
    if want("TorchScript CNN with BatchNorm"):
        script = os.path.join(tmp, "cnn.pt")
        sh([PY, os.path.join(ROOT, "examples/torchscript/make_cnn.py"), script])
        rows["TorchScript CNN with BatchNorm"] = (
            ["--config", os.path.join(ROOT, "examples/torchscript/fashion_mnist_torchscript.json"),
             "--set", f"model.path={script}"] + common + limited, ["torchscript_cnn", "--script", script] + py)
    if want("tabular MLP on a csv (60000 x 32)"):
        table = os.path.join(tmp, "tabular.csv")
        make_tabular_csv(table)
        tab_cfg = os.path.join(tmp, "tabular.json")
        with open(tab_cfg, "w") as f:
            json.dump({"model": {"plugin": "mlp", "hidden": [256, 256]},
                       "data": {"plugin": "csv", "train": table, "target": "label"},
                       "optimizer": {"plugin": "adam", "lr": 0.001}, "batch_size": 64}, f)
        rows["tabular MLP on a csv (60000 x 32)"] = (["--config", tab_cfg] + common, ["tabular", "--csv", table] + py)
    rows = {k: v for k, v in rows.items() if want(k)}
    if not want(f"image_folder ({limit} PNG files), MLP"):
        return rows
    # PyTorch reads image folders with torchvision, which may not exist yet
    # for the newest torch on PyPI: the row is then left out, and said so.
    if subprocess.run([PY, "-c", "import torchvision"], capture_output=True).returncode != 0:
        print(f"vs_pytorch: {PY} has no torchvision: the image_folder row is left out", file=sys.stderr)
        return rows
    images = os.path.join(tmp, "png")
    sh([f"{b}/bin/make_image_folder", "--out", images, "--limit", str(limit)])
    png = {"plugin": "image_folder", "root": images, "mean": [0.2860], "std": [0.3530]}
    rows[f"image_folder ({limit} PNG files), MLP"] = (["--config", mlp, "--set", "data=" + json.dumps(png)] + common,
                                                      ["image_folder", "--images", images] + py)
    return rows


def speed(b, tmp, rounds, rows, device=None):
    if device:  # on a device: the malloc variants concern the host, left out
        variants = ["skein", "pytorch"]
    else:
        variants = ["skein", "skein_system_malloc", "pytorch", "pytorch_tuned"]
    secs = {(r, v): [] for r in rows for v in variants}
    rss = {(r, v): 0.0 for r in rows for v in variants}
    acc = {}  # the last epoch's validation accuracy of the last round
    for _ in range(rounds):  # interleaved
        for name, (skein_args, py_args) in rows.items():
            for v in variants:
                if v.startswith("skein"):
                    h, res = skein_run(b, skein_args, tmp, env={"SKEIN_MALLOC": "system"} if v != "skein" else None)
                    durs, peak = [e["dur"] for e in h], res["peak_rss_mb"]
                    acc[(name, v)] = h[-1].get("valid_acc", float("nan"))
                else:
                    epochs_out, peak = python_run(py_args[0], py_args[1:], env=TUNED_GLIBC if v == "pytorch_tuned" else None)
                    durs = [e["dur"] for e in epochs_out]
                    acc[(name, v)] = epochs_out[-1]["valid_acc"]
                secs[(name, v)] += durs[1:]
                rss[(name, v)] = max(rss[(name, v)], peak)
    if device:
        out = [f"| family | device | Skein s/epoch | PyTorch s/epoch | Skein vs PyTorch | valid acc % Skein / PyTorch | "
               "peak RSS MB Skein / PyTorch |", "|---|---|---|---|---|---|---|"]
        for name in rows:
            m = {v: statistics.median(secs[(name, v)]) for v in variants}
            out.append(f"| {name} | {device} | {m['skein']:.2f} | {m['pytorch']:.2f} | {m['pytorch'] / m['skein']:.2f}x | "
                       f"{100 * acc[(name, 'skein')]:.2f} / {100 * acc[(name, 'pytorch')]:.2f} | "
                       f"{rss[(name, 'skein')]:.0f} / {rss[(name, 'pytorch')]:.0f} |")
        return "\n".join(out)
    out = ["| family | Skein s/epoch | Skein, glibc malloc untuned | PyTorch s/epoch | PyTorch, malloc tuned | "
           "Skein vs PyTorch at its best | peak RSS MB Skein / PyTorch |", "|---|---|---|---|---|---|---|"]
    for name in rows:
        m = {v: statistics.median(secs[(name, v)]) for v in variants}
        best = min(m["pytorch"], m["pytorch_tuned"])
        out.append(f"| {name} | {m['skein']:.2f} | {m['skein_system_malloc']:.2f} | {m['pytorch']:.2f} | "
                   f"{m['pytorch_tuned']:.2f} | {best / m['skein']:.2f}x | "
                   f"{rss[(name, 'skein')]:.0f} / {rss[(name, 'pytorch_tuned')]:.0f} |")
    return "\n".join(out)


ALLOCATORS = {
    "glibc, tuned by Skein (default)": None,
    "glibc defaults (SKEIN_MALLOC=system)": {"SKEIN_MALLOC": "system"},
    "jemalloc (LD_PRELOAD, libjemalloc2)": {"LD_PRELOAD": "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"},
    "tcmalloc (LD_PRELOAD, libtcmalloc-minimal4)": {"LD_PRELOAD": "/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4"},
}


def allocators(b, tmp, rounds, rows):
    """The conv families under each allocator: s/epoch (epochs 2+) and peak RSS."""
    rows = {k: v for k, v in rows.items() if "cnn" in k or "CNN" in k}
    for path in (v["LD_PRELOAD"] for v in ALLOCATORS.values() if v and "LD_PRELOAD" in v):
        if not os.path.exists(path):
            sys.exit(f"{path} is missing: apt-get install libjemalloc2 libtcmalloc-minimal4")
    secs = {(r, a): [] for r in rows for a in ALLOCATORS}
    rss = {(r, a): 0.0 for r in rows for a in ALLOCATORS}
    for _ in range(rounds):  # interleaved
        for name, (skein_args, _) in rows.items():
            for a, env in ALLOCATORS.items():
                h, res = skein_run(b, skein_args, tmp, env=env)
                secs[(name, a)] += [e["dur"] for e in h[1:]]
                rss[(name, a)] = max(rss[(name, a)], res["peak_rss_mb"])
    out = ["| family | allocator | s/epoch | vs glibc defaults | peak RSS MB |", "|---|---|---|---|---|"]
    for name in rows:
        base = statistics.median(secs[(name, "glibc defaults (SKEIN_MALLOC=system)")])
        for a in ALLOCATORS:
            m = statistics.median(secs[(name, a)])
            out.append(f"| {name} | {a} | {m:.2f} | {base / m:.2f}x | {rss[(name, a)]:.0f} |")
    return "\n".join(out)


def ddp(b, tmp, rounds, epochs, rank, warmup, links=(None,), limit=0, models=None):
    """Section 9, and with `links` section 13: each row on loopback shaped by
    tc to that rate (None: unshaped); `limit`: the first N training images."""
    mlp = os.path.join(ROOT, "examples/fashion_mnist_ddp.json")
    models = models or {"example MLP": "[256,128]", "wide MLP": "[1024,1024]"}
    comps = ["none", "fp16", "powersgd"]
    train = int(0.9 * limit) if limit else 54000  # valid_split 0.1
    rate = {(l, m, c, s): [] for l in links for m in models for c in comps for s in ("skein", "pytorch")}
    acc = {k: [] for k in rate}
    for _ in range(rounds):  # interleaved
        for link in links:
            for m, hidden in models.items():
                for c in comps:
                    args = ["--config", mlp, "--nproc-per-node", "2", "--set", f"max_epochs={epochs}",
                            "--set", f"model.hidden={hidden}", "--set", "callbacks=[]",
                            "--set", f"parallel.compression={c}", "--set", f"parallel.powersgd_rank={rank}",
                            "--set", f"parallel.powersgd_warmup_steps={warmup}"]
                    if limit:
                        args += ["--set", f"data.limit={limit}"]
                    h, res = skein_run(b, args, tmp, link=link)
                    rate[(link, m, c, "skein")] += [train / e["dur"] for e in h[1:]]
                    acc[(link, m, c, "skein")].append(100 * res["test_accuracy"])
                    out = sh([PY, os.path.join(ROOT, "bench/pytorch_ddp.py"), "--hidden", hidden,
                              "--epochs", str(epochs), "--hook", c, "--rank", str(rank), "--warmup", str(warmup),
                              "--limit", str(limit)], netns=True, link=link)
                    lines = [json.loads(l) for l in out.splitlines()]
                    rate[(link, m, c, "pytorch")] += [train / e["dur"] for e in lines[1:-1]]
                    acc[(link, m, c, "pytorch")].append(100 * lines[-1]["test_accuracy"])
    hook = {"none": "no hook", "fp16": "fp16_compress_hook", "powersgd": "powerSGD_hook"}
    out = ["| link | model | compression | Skein samples/s | vs Skein none | Skein test acc % | PyTorch DDP | "
           "PyTorch samples/s | vs PyTorch no hook | PyTorch test acc % | Skein vs PyTorch |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]
    for link in links:
        for m in models:
            base = statistics.median(rate[(link, m, "none", "skein")])
            pbase = statistics.median(rate[(link, m, "none", "pytorch")])
            for c in comps:
                s = statistics.median(rate[(link, m, c, "skein")])
                p = statistics.median(rate[(link, m, c, "pytorch")])
                out.append(f"| {link or 'loopback'} | {m} | {c} | {s:.0f} | {s / base:.2f} | "
                           f"{statistics.median(acc[(link, m, c, 'skein')]):.2f} | {hook[c]} | {p:.0f} | "
                           f"{p / pbase:.2f} | {statistics.median(acc[(link, m, c, 'pytorch')]):.2f} | {s / p:.2f}x |")
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--limit", type=int, default=10000)
    ap.add_argument("--ddp-epochs", type=int, default=3)
    ap.add_argument("--rank", type=int, default=4)
    ap.add_argument("--warmup", type=int, default=100)
    ap.add_argument("--only", choices=["speed", "allocators", "ddp"])
    ap.add_argument("--links", help="ddp on loopback shaped by tc to these comma-separated rates "
                                    "(e.g. 1gbit,10gbit; section 13), the wide MLP only")
    ap.add_argument("--ddp-limit", type=int, default=0, help="ddp: the first N training images (0: all)")
    ap.add_argument("--out")
    ap.add_argument("--device", help="cpu, cuda or cuda:N: both sides train there (default: Skein's default, PyTorch on the CPU)")
    ap.add_argument("--rows", help="comma-separated words: only the families whose names contain one")
    ap.add_argument("--data", default=FASHION, help="Fashion-MNIST's directory")
    ap.add_argument("--no-netns", action="store_true", help="run skein without a private network namespace")
    a = ap.parse_args()
    global NETNS
    NETNS = not a.no_netns
    wanted = a.rows.split(",") if a.rows else None
    text = [f"- date: {time.strftime('%Y-%m-%d %H:%M')}", f"- machine: {os.cpu_count()} cores, {os.uname().machine}, "
            f"Linux {os.uname().release}", f"- command: `python3 bench/vs_pytorch.py {' '.join(sys.argv[1:])}`".rstrip()]
    with tempfile.TemporaryDirectory() as tmp:
        rows = families(a.build, tmp, a.limit, a.epochs, a.device, a.data, wanted) if a.only != "ddp" else {}  # data made once
        if a.only in (None, "speed"):
            text += ["", speed(a.build, tmp, a.rounds, rows, a.device)]
            print("\n".join(text), flush=True)
        if a.only in (None, "allocators"):
            table = allocators(a.build, tmp, a.rounds, rows)
            text += ["", table]
            print(table, flush=True)
        if a.only in (None, "ddp"):
            links = a.links.split(",") if a.links else [None]
            models = {"wide MLP": "[1024,1024]"} if a.links else None
            table = ddp(a.build, tmp, a.rounds, a.ddp_epochs, a.rank, a.warmup, links, a.ddp_limit, models)
            text += ["", table]
            print(table, flush=True)
    if a.out:
        with open(a.out, "w") as f:
            f.write("\n".join(text) + "\n")


if __name__ == "__main__":
    main()
