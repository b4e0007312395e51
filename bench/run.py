#!/usr/bin/env python3
"""Runs every Skein benchmark and prints a Markdown results table.

  python3 bench/run.py [--quick] [--build build] [--out FILE]

--quick (under 5 minutes on 2 cores) uses fewer rounds, epochs and sizes; the
full run takes under 30. Throughputs are compared as ratios of medians within
one run, with the runs being compared interleaved: the machine is shared and
noisy, absolute numbers are not.
"""
import argparse, json, os, statistics, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TRAIN_SAMPLES = 54000  # Fashion-MNIST train (60000) less valid_split 0.1


def shaped(rate):
    """tc's token bucket on loopback at `rate` ("1gbit", "10gbit"): every byte
    the ranks exchange crosses it (both directions share it, as on a
    half-duplex link). The bucket holds 4 ms of traffic, at least 512 KiB
    (loopback's packets are up to 64 KiB)."""
    units = {"gbit": 1e9, "mbit": 1e6}
    bits = next(float(rate[:-len(u)]) * f for u, f in units.items() if rate.endswith(u))
    return f"tc qdisc add dev lo root tbf rate {rate} burst {burst_bytes(bits)} latency 100ms"


def burst_bytes(bits_per_second):
    """shaped()'s token bucket: 4 ms of traffic, at least 512 KiB."""
    return max(512 * 1024, int(bits_per_second / 8 * 0.004))


def print_table(text, out=None):
    """A benchmark's Markdown result: printed, and written to `out` when given."""
    print(text)
    if out:
        with open(out, "w") as f:
            f.write(text + "\n")


def sh(cmd, env=None, netns=False, link=None, timeout=1200):
    """`link`: a rate for shaped() (needs netns); `timeout`: seconds."""
    if netns:  # ports opened by the command are reachable from nowhere else
        setup = "ip link set lo up" + (" && " + shaped(link) if link else "")
        cmd = ["unshare", "-rn", "sh", "-c", setup + " && exec \"$0\" \"$@\""] + cmd
    full_env = dict(os.environ, OMP_NUM_THREADS="1", **(env or {}))
    try:  # a benchmark that hangs (a rank lost) ends with a line, not never
        r = subprocess.run(cmd, env=full_env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        sys.exit(f"benchmark command timed out after {timeout} s: {' '.join(cmd)}")
    if r.returncode != 0:
        sys.exit(f"benchmark command failed ({r.returncode}): {' '.join(cmd)}\n{r.stderr[-2000:]}")
    return r.stdout


def skein_epochs(b, args, tmp, name):
    run = os.path.join(tmp, name + str(time.monotonic_ns()))
    sh([f"{b}/bin/skein", "train", "--run-dir", run] + args, netns=True)
    with open(os.path.join(run, "history.json")) as f:
        history = json.load(f)
    with open(os.path.join(run, "results.json")) as f:
        results = json.load(f)
    return history, results


def rate(history, skip_first=True):
    epochs = history[1:] if skip_first and len(history) > 1 else history
    return [TRAIN_SAMPLES / e["dur"] for e in epochs]


def overhead(b, tmp, rounds, epochs):
    cfg = os.path.join(ROOT, "bench/configs/overhead.json")
    rates = {"hand": [], "skein": [], "skein_bare": []}
    for _ in range(rounds):  # interleaved
        out = sh([f"{b}/bin/handwritten_loop", "--epochs", str(epochs)])
        rates["hand"] += [l["samples_per_s"] for l in map(json.loads, out.splitlines())][1:]
        h, _ = skein_epochs(b, ["--config", cfg, "--set", f"max_epochs={epochs}"], tmp, "oh")
        rates["skein"] += rate(h)
        h, _ = skein_epochs(b, ["--config", cfg, "--set", f"max_epochs={epochs}", "--set", "callbacks=[]"], tmp, "bare")
        rates["skein_bare"] += rate(h)
    med = {k: statistics.median(v) for k, v in rates.items()}
    return [
        ("hand-written libtorch loop", f"{med['hand']:.0f} samples/s", "1.000"),
        ("skein: print_log + early_stopping + checkpoint", f"{med['skein']:.0f} samples/s", f"{med['skein'] / med['hand']:.3f}"),
        ("skein: no callbacks", f"{med['skein_bare']:.0f} samples/s", f"{med['skein_bare'] / med['hand']:.3f}"),
    ]


def history_sync(b, worlds, batch_counts, epochs):
    rows = []
    for backend in ["local", "filestore", "tcpstore"]:
        for w in worlds:
            for n in batch_counts:
                out = sh([f"{b}/bin/history_sync", "--backend", backend, "--world", str(w), "--batches", str(n),
                          "--epochs", str(epochs)], netns=True)
                r = json.loads(out)
                trips = "0" if backend == "local" else f"{r['round_trips_other']} ({r['round_trips_rank0']} on rank 0)"
                rows.append((backend, w, n, f"{r['sync_ms']:.2f}", f"{r['per_batch_us']:.2f}", trips))
    return rows


def example_sync_share(b, tmp, rounds, epochs):
    cfg = os.path.join(ROOT, "examples/fashion_mnist_ddp.json")
    durs = {"local": [], "tcpstore": []}
    for _ in range(rounds):
        for backend in durs:
            h, _ = skein_epochs(b, ["--config", cfg, "--nproc-per-node", "2", "--set", f"max_epochs={epochs}",
                                    "--set", f"history.plugin={backend}", "--set", "callbacks=[]"], tmp, backend)
            durs[backend] += [e["dur"] for e in h[1:]]
    local, tcp = statistics.median(durs["local"]), statistics.median(durs["tcpstore"])
    return local, tcp


def ddp(b, tmp, rounds, epochs, caps):
    cfg = os.path.join(ROOT, "examples/fashion_mnist_ddp.json")
    base = ["--config", cfg, "--set", f"max_epochs={epochs}", "--set", "callbacks=[]", "--set", "history.plugin=local"]
    variants = {
        "1 process, batch 128": base + ["--set", "batch_size=128", "--set", "parallel.plugin=none"],
        "2 processes x batch 64, buckets overlapped with backward (25 MiB)": base + ["--nproc-per-node", "2"],
        "2 processes x batch 64, one all-reduce per parameter after backward": base + [
            "--nproc-per-node", "2", "--set", "parallel.bucket_cap_mb=0.000001",
            "--set", "parallel.first_bucket_mb=0.000001", "--set", "parallel.overlap=false"],
    }
    for cap in caps:
        variants[f"2 processes x batch 64, bucket cap {cap} MiB"] = base + [
            "--nproc-per-node", "2", "--set", f"parallel.bucket_cap_mb={cap}", "--set", f"parallel.first_bucket_mb={cap}"]
    rates = {k: [] for k in variants}
    for _ in range(rounds):
        for k, args in variants.items():
            h, _ = skein_epochs(b, args, tmp, "ddp")
            rates[k] += rate(h)
    one = statistics.median(rates["1 process, batch 128"])
    return [(k, f"{statistics.median(v):.0f}", f"{statistics.median(v) / one:.2f}") for k, v in rates.items()]


def ddp_fp16(b, tmp, rounds, epochs):
    """Section 7: the example job at a fixed global batch of 128, one process
    against two with uncompressed and with fp16 gradients; interleaved."""
    cfg = os.path.join(ROOT, "examples/fashion_mnist_ddp.json")
    base = ["--config", cfg, "--set", f"max_epochs={epochs}", "--set", "callbacks=[]", "--set", "history.plugin=local"]
    variants = {
        "1 process, batch 128": base + ["--set", "batch_size=128", "--set", "parallel.plugin=none"],
        "2 processes x batch 64, compression none": base + ["--nproc-per-node", "2"],
        "2 processes x batch 64, compression fp16": base + ["--nproc-per-node", "2",
                                                              "--set", "parallel.compression=fp16"],
    }
    rates = {k: [] for k in variants}
    accuracy = {k: [] for k in variants}
    for _ in range(rounds):  # interleaved
        for k, args in variants.items():
            h, res = skein_epochs(b, args, tmp, "fp16")
            rates[k] += rate(h)
            accuracy[k].append(res["test_accuracy"])
    med = {k: statistics.median(v) for k, v in rates.items()}
    one, none = med["1 process, batch 128"], med["2 processes x batch 64, compression none"]
    return [(k, f"{v:.0f}", f"{v / one:.2f}", f"{v / none:.2f}", f"{statistics.median(accuracy[k]) * 100:.2f}")
            for k, v in med.items()]


def ddp_fp16_section(b, tmp, q):
    rounds, epochs = (1, 2) if q else (3, 3)
    lines = ["", "## 7. DDP gradient compression (fixed global batch 128)", "",
             f"The example job (MLP 784-256-128-10, 235k float32 parameters: 0.94 MB of gradients per step, "
             f"0.47 MB as fp16), {epochs} epochs, median samples/s of epochs 2+ over {rounds} interleaved "
             f"round(s); test accuracy after {epochs} epochs, median of the rounds.", "",
             "| run | samples/s | vs 1 process | vs 2 processes, none | test accuracy % |", "|---|---|---|---|---|"]
    lines += ["| " + " | ".join(r) + " |" for r in ddp_fp16(b, tmp, rounds, epochs)]
    return lines


def startup(b, tmp, rounds=5):
    """`skein plugins --json` (median of 10), and time to the first batch and
    peak RSS of 1-epoch runs of the two examples: the run with the median
    time to the first batch of `rounds` (interleaved)."""
    times = []
    for _ in range(10):
        t = time.monotonic()
        sh([f"{b}/bin/skein", "plugins", "--json"])
        times.append(time.monotonic() - t)
    runs = {"one": [], "two": []}
    for _ in range(rounds):
        _, one = skein_epochs(b, ["--config", os.path.join(ROOT, "examples/fashion_mnist.json"),
                                  "--set", "max_epochs=1"], tmp, "start1")
        runs["one"].append(one)
        _, two = skein_epochs(b, ["--config", os.path.join(ROOT, "examples/fashion_mnist_ddp.json"),
                                  "--nproc-per-node", "2", "--set", "max_epochs=1"], tmp, "start2")
        runs["two"].append(two)
    median = {k: sorted(v, key=lambda r: r["time_to_first_batch_s"])[len(v) // 2] for k, v in runs.items()}
    return statistics.median(times), median["one"], median["two"]


def startup_section(b, tmp, q):
    """Section 4."""
    listing, one, two = startup(b, tmp, 3 if q else 5)
    return ["", "## 4. Start-up", "", "| what | value |", "|---|---|",
            f"| discover and describe all bundled plugins (`skein plugins --json`, median of 10) | {listing * 1e3:.0f} ms |",
            f"| `skein train` to the first batch, 1 process (loads Fashion-MNIST; median of {3 if q else 5}) | "
            f"{one['time_to_first_batch_s']:.2f} s |",
            f"| the same, 2 processes (slowest rank) | {two['time_to_first_batch_s']:.2f} s |",
            f"| peak RSS, 1 process | {one['peak_rss_mb']:.0f} MiB |",
            f"| peak RSS per worker, 2 processes (largest) | {two['peak_rss_mb']:.0f} MiB |"]


def cli_startup(b, rounds):
    """Wall time of the commands that do not train (the executable links no
    libtorch), and of one that loads the training side (libtorch) and stops
    at a config error; median of `rounds`, interleaved."""
    exe = f"{b}/bin/skein"
    mlp = os.path.join(b, "lib/skein/plugins/libskein_model_mlp.so")
    commands = {"skein --version": ([exe, "--version"], 0),
                "skein --help": ([exe, "--help"], 0),
                "skein plugins": ([exe, "plugins"], 0),
                "skein plugins --json": ([exe, "plugins", "--json"], 0),
                "skein plugins describe mlp": ([exe, "plugins", "describe", "mlp"], 0),
                "skein plugins describe PATH.so": ([exe, "plugins", "describe", mlp], 0),
                "skein train --help": ([exe, "train", "--help"], 0),
                "skein train --config MISSING.json (loads libtorch, exits 2)":
                    ([exe, "train", "--config", "/nonexistent/skein-bench.json"], 2)}
    env = dict(os.environ, OMP_NUM_THREADS="1")
    times = {k: [] for k in commands}
    for _ in range(rounds):
        for k, (cmd, rc) in commands.items():
            t = time.perf_counter()
            r = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            times[k].append(time.perf_counter() - t)
            if r.returncode != rc:
                sys.exit(f"benchmark command failed ({r.returncode}, expected {rc}): {' '.join(cmd)}\n{r.stderr[-2000:]}")
    return {k: (statistics.median(v), min(v), max(v)) for k, v in times.items()}


def cli_startup_section(b, q):
    """Section 4a."""
    rounds = 20 if q else 30
    res = cli_startup(b, rounds)
    lines = ["", "## 4a. Start-up of the commands that do not train", "",
             f"Wall time from spawn to exit (Python's subprocess), median of {rounds} interleaved runs. "
             "`skein` links no libtorch: these commands read plugin manifests from the files; only train, "
             "export and predict load the training side (libskein_commands, libskein_core, libtorch).", "",
             "| command | median | min | max |", "|---|---|---|---|"]
    lines += [f"| `{k}` | {m * 1e3:.1f} ms | {lo * 1e3:.1f} ms | {hi * 1e3:.1f} ms |" for k, (m, lo, hi) in res.items()]
    return lines


def torchscript_vs_mlp(b, tmp, rounds, epochs):
    """The same MLP (784-256-128-10) as the bundled `mlp` plugin and as a
    TorchScript module written by Python (tests/python/interop.py), trained
    with the same config; epoch times compared as a ratio of medians."""
    model = os.path.join(tmp, "mlp_script.pt")
    sh([sys.executable, os.path.join(ROOT, "tests/python/interop.py"), "script", "mlp", model])
    cfg = os.path.join(ROOT, "bench/configs/overhead.json")
    base = ["--config", cfg, "--set", f"max_epochs={epochs}", "--set", "callbacks=[]"]
    variants = {"mlp": base, "torchscript": base + ["--set", f'model={{"plugin": "torchscript", "path": "{model}"}}']}
    durs = {k: [] for k in variants}
    for _ in range(rounds):  # interleaved
        for k, args in variants.items():
            h, _ = skein_epochs(b, args, tmp, k)
            durs[k] += [e["dur"] for e in h[1:]]
    mlp, script = statistics.median(durs["mlp"]), statistics.median(durs["torchscript"])
    return mlp, script


def image_folder_vs_idx(b, tmp, rounds, epochs):
    """Fashion-MNIST's training set as PNG files (bench/make_image_folder)
    against the in-memory idx dataset: throughput of epochs 2+, and peak RSS
    with the folder at 1x and 10x its size (hard links)."""
    folder, big = os.path.join(tmp, "png"), os.path.join(tmp, "png10")
    sh([f"{b}/bin/make_image_folder", "--out", folder])
    cfg = os.path.join(ROOT, "bench/configs/overhead.json")
    base = ["--config", cfg, "--set", f"max_epochs={epochs}", "--set", "callbacks=[]"]
    png = {"plugin": "image_folder", "root": folder, "mean": [0.2860], "std": [0.3530]}
    cached = dict(png, cache_mb=128)
    variants = {"idx": base,
                "image_folder (data_workers 1)": base + ["--set", "data=" + json.dumps(png)],
                "image_folder (data_workers 0: no prefetch)": base + ["--set", "data=" + json.dumps(png),
                                                                      "--set", "data_workers=0"],
                "image_folder (data_workers 1, cache_mb 128)": base + ["--set", "data=" + json.dumps(cached)]}
    rates = {k: [] for k in variants}
    for _ in range(rounds):  # interleaved
        for k, args in variants.items():
            h, _ = skein_epochs(b, args, tmp, "img")
            rates[k] += rate(h)
    med = {k: statistics.median(v) for k, v in rates.items()}
    sh([f"{b}/bin/make_image_folder", "--out", big, "--copies", "10"])
    rss = {}
    for name, root in [("1x (60000 files)", folder), ("10x (600000 files)", big)]:
        _, res = skein_epochs(b, base[:2] + ["--set", "max_epochs=1", "--set", "callbacks=[]", "--set",
                                             "data=" + json.dumps(dict(png, root=root))], tmp, "rss")
        rss[name] = res["peak_rss_mb"]
    return med, rss


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--out")
    ap.add_argument("--only", choices=["startup", "torchscript", "image_folder", "ddp_fp16", "session_step"],
                    help="run only this section")
    a = ap.parse_args()
    q = a.quick
    start = time.monotonic()
    lines = [f"# Skein benchmarks ({'quick' if q else 'full'} run)", "",
             f"- date: {time.strftime('%Y-%m-%d %H:%M')}",
             f"- machine: {os.cpu_count()} cores, {os.uname().machine}, {os.uname().sysname} {os.uname().release}",
             f"- command: `python3 bench/run.py{' --quick' if q else ''}{' --only ' + a.only if a.only else ''}`", ""]
    with tempfile.TemporaryDirectory(prefix="skein-bench-") as tmp:
        b = a.build
        if a.only is None:
            lines += all_sections(b, tmp, q)
        if a.only in (None, "startup"):
            lines += cli_startup_section(b, q)
        if a.only == "startup":
            lines += startup_section(b, tmp, q)
        if a.only in (None, "torchscript"):
            lines += torchscript_section(b, tmp, q)
        if a.only in (None, "image_folder"):
            med, rss = image_folder_vs_idx(b, tmp, 1 if q else 3, 3)
            lines += ["", "## 6. Images streamed from disk vs in memory", "",
                      "Fashion-MNIST's 60000 training images as PNG files in class folders (`image_folder`, decoded "
                      "by stb_image on the prefetch threads) against the in-memory `idx` dataset; "
                      "MLP 784-256-128-10, batch 64, 1 training thread, median samples/s of epochs 2+.", "",
                      "| dataset | samples/s | ratio to `idx` |", "|---|---|---|"]
            lines += [f"| {k} | {v:.0f} | {v / med['idx']:.3f} |" for k, v in med.items()]
            lines += ["", "| image folder | peak RSS of a 1-epoch run |", "|---|---|"]
            lines += [f"| {k} | {v:.0f} MiB |" for k, v in rss.items()]
        if a.only in (None, "ddp_fp16"):
            lines += ddp_fp16_section(b, tmp, q)
        if a.only in (None, "session_step"):
            lines += session_step_section(b, tmp, q)
    lines += ["", f"Total benchmark time: {time.monotonic() - start:.0f} s."]
    text = "\n".join(lines) + "\n"
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)


def session_step_section(b, tmp, q):
    """Section 10: skein_train_step from C against the hand-written libtorch step."""
    rounds, steps = (3, 300) if q else (7, 1000)
    c, hand = [], []
    # Both with the malloc settings skein picks for training (core/training/device/src/malloc_tuning.cpp), set
    # through glibc's environment so that the hand-written loop gets them too.
    env = dict(os.environ, OMP_NUM_THREADS="1", MALLOC_MMAP_THRESHOLD_="1073741824",
               MALLOC_TRIM_THRESHOLD_="1073741824")
    for _ in range(rounds):  # interleaved: the machine's noise hits both alike
        for program, out in ((["c_train_step", str(steps)], c), (["handwritten_loop", "--steps", str(steps)], hand)):
            r = subprocess.run([f"{b}/bin/{program[0]}"] + program[1:], cwd=tmp, capture_output=True, text=True,
                               check=True, env=env)
            out.append(json.loads(r.stdout)["us_per_step"])
    mc, mh = statistics.median(c), statistics.median(hand)
    return ["", "## 10. Session step from C vs the hand-written libtorch step", "",
            f"MLP 784-256-128-10, SGD momentum 0.9, cross-entropy, one fixed float32 batch of 64 (row-major, used "
            f"in place), 1 thread, the same malloc settings; best of 5 rounds of {steps} steps per program run, "
            f"median of {rounds} interleaved runs. The session's step includes what the hand-written one "
            "lacks: the target checks, the batch's accuracy, the history records.", "",
            "| program | µs per step | ratio to hand-written |", "|---|---|---|",
            f"| `handwritten_loop --steps` (libtorch directly) | {mh:.1f} | 1.000 |",
            f"| `c_train_step` (`skein_train_step` through the C ABI) | {mc:.1f} | {mc / mh:.3f} |"]


def torchscript_section(b, tmp, q):
    """Section 5."""
    lines = []
    mlp, script = torchscript_vs_mlp(b, tmp, 2 if q else 4, 3)
    lines += ["", "## 5. A TorchScript model vs the same bundled model", "",
              "MLP 784-256-128-10 on Fashion-MNIST, SGD, batch 64, 1 thread, no callbacks; median epoch time, "
              "epochs 2+.", "", "| model | s/epoch | ratio to `mlp` |", "|---|---|---|",
              f"| `mlp` plugin | {mlp:.3f} | 1.000 |",
              f"| `torchscript` (the same network scripted in Python) | {script:.3f} | {script / mlp:.3f} |"]
    return lines


def all_sections(b, tmp, q):
    """Sections 1-4."""
    lines = []
    lines += ["## 1. Trainer overhead (Fashion-MNIST, MLP 784-256-128-10, SGD momentum 0.9, batch 64, 1 thread)", "",
              "| run | median throughput (epochs 2+) | ratio to the hand-written loop |", "|---|---|---|"]
    lines += [f"| {r} | {t} | {x} |" for r, t, x in overhead(b, tmp, 2 if q else 5, 3 if q else 4)]
    lines += ["", "## 2. History sync per epoch (W processes, B batches each, median of epochs)", "",
              "| backend | W | B | sync ms/epoch | µs per batch | store round trips per rank and epoch |",
              "|---|---|---|---|---|---|"]
    lines += ["| " + " | ".join(map(str, r)) + " |" for r in
              history_sync(b, [1, 2, 4], [100, 10000] if q else [100, 1000, 10000], 5 if q else 10)]
    local, tcp = example_sync_share(b, tmp, 1 if q else 3, 2 if q else 3)
    # The example's epoch: 54000 / (2 x 64) = 422 train + 47 valid batch records per rank.
    out = sh([f"{b}/bin/history_sync", "--backend", "tcpstore", "--world", "2", "--batches", "469",
              "--epochs", "10"], netns=True)
    sync_ms = json.loads(out)["sync_ms"]
    lines += ["", f"tcpstore on the example job (2 processes, 469 batch records per rank and epoch): "
                  f"{sync_ms:.2f} ms of sync per epoch, {sync_ms / 10 / local:.3f}% of its {local:.2f} s epoch. "
                  f"Whole runs, epochs 2+: median epoch {local:.3f} s with history `local`, {tcp:.3f} s with "
                  f"`tcpstore` ({(tcp / local - 1) * 100:+.1f}%: run-to-run noise on this shared machine "
                  f"is larger than the sync itself)."]
    lines += ["", "## 3. DDP (fixed global batch 128)", "", "| run | samples/s | vs 1 process |", "|---|---|---|"]
    lines += [f"| {r} | {t} | {x} |" for r, t, x in ddp(b, tmp, 1 if q else 2, 2 if q else 3, [1, 25] if q else [0.25, 1, 5, 25])]
    lines += startup_section(b, tmp, q)
    return lines


if __name__ == "__main__":
    main()
