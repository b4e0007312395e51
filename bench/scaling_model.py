#!/usr/bin/env python3
"""A scaling model of Skein's data-parallel training (issue 37;
docs/BENCHMARKS.md, section 14): fitted here, checked against measured runs
on shaped links, extrapolated to 256 machines, and plotted.

  /usr/bin/python3 bench/scaling_model.py [--build build] [--links 1gbit,10gbit]
      [--limit 8000] [--epochs 2] [--png docs/scaling_model.png] [--out FILE]

1. Gloo's all-reduce (this Python's torch: Debian's 1.13 is the libtorch and
   Gloo that build/ links) of float32 tensors of 2^12 to 2^22 elements on
   W = 2 and 4 processes, on loopback shaped by tc to each link rate
   (bench/run.py's shaped(); median of repetitions). Fitted per rate, ring
   all-reduce: T = 2 (W - 1) alpha + bytes / (eta R), where loopback's one
   token bucket carries every rank's traffic, 2 (W - 1) n 4 bytes.
2. Compute: seconds per step (batch 64) of the wide MLP 784-1024-1024-10
   (1.86 M parameters) trained by `skein train` on 1 process. Two
   parameters are calibrated on unshaped loopback at W = 2 (never on the
   shaped runs that check the model): the share b of the compute that
   ddp's communication overlaps (its buckets are all-reduced while backward
   runs), from a `none` run, and PowerSGD's own work per step, from a
   `powersgd` run.
3. The model of a step: T = c Tc + max(0, Tcomm - b c Tc) for ddp; powersgd
   adds its own work (c w) and communicates its P and Q factors (r (m + n)
   values per matrix, two rounds) and the vectors, after backward.
   c = max(1, W / cores): processes beyond the cores share them.
4. Checked against `skein train` (ddp, compression none and powersgd) at
   W = 2 and 4 on the same shaped links: measured vs predicted seconds per
   step (goal: within 15 %).
5. Extrapolated to a cluster of W machines, one process each, each with its
   own link of rate R through a switch (every NIC carries 2 (W - 1) / W n 4
   bytes of a ring all-reduce): step time and scaling efficiency Tc / T of
   ddp and powersgd for W = 2 ... 256 at 1, 10 and 100 Gbit/s, plotted
   (matplotlib: `scripts/setup.sh --bench`).
"""
import argparse, json, math, os, socket, statistics, sys, tempfile, time

from run import sh  # bench/run.py: OMP_NUM_THREADS=1, a private network, a shaped link

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PY = sys.executable
WIDE = [(1024, 784), (1024, 1024), (10, 1024)]  # the wide MLP's weight matrices
VECTORS = 1024 + 1024 + 10                       # its biases
PARAMS = sum(m * n for m, n in WIDE) + VECTORS
RANK = 4                                         # powersgd_rank
BATCH = 64
SIZES = [1 << k for k in range(12, 23, 2)]
RATES = {"1gbit": 1e9, "10gbit": 1e10, "100gbit": 1e11}
LOOPBACK_NOMINAL = 1e9  # unshaped loopback: its fitted eta times this is its bandwidth


# --- 1. all-reduce, measured in a private network (this script again) ---

def allreduce_worker(rank, world, port, reps, out):
    import torch
    import torch.distributed as dist
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    times = {}
    for n in SIZES:
        t = torch.randn(n)
        dist.all_reduce(t)  # warm
        samples = []
        for _ in range(reps):
            dist.barrier()
            start = time.perf_counter()
            dist.all_reduce(t)
            samples.append(time.perf_counter() - start)
        times[n] = statistics.median(samples)
    if rank == 0:
        with open(out, "w") as f:
            json.dump(times, f)
    dist.destroy_process_group()


def measure_allreduce_here(world, reps):
    import torch.multiprocessing as mp
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        mp.spawn(allreduce_worker, args=(world, port, reps, out.name), nprocs=world)
        with open(out.name) as f:
            print(f.read())


def measure_allreduce(link, world, reps=15):
    out = sh([PY, os.path.abspath(__file__), "--allreduce-worlds", str(world), "--reps", str(reps)],
             netns=True, link=link)
    return {int(k): v for k, v in json.loads(out).items()}


def fit_link(points, rate):
    """alpha and eta from [(world, n, seconds)] on loopback: least squares of
    T = 2 (W - 1) alpha + 2 (W - 1) n 4 bytes / (eta R bits/s) in (alpha, 1 / eta)."""
    xs = [(2 * (w - 1), 2 * (w - 1) * n * 4 * 8 / rate) for w, n, _ in points]
    ys = [t for _, _, t in points]
    # Normal equations of a 2-parameter least squares, weighted by 1 / T
    # (relative error: the small sizes count as much as the large).
    s11 = s12 = s22 = b1 = b2 = 0.0
    for (x1, x2), y in zip(xs, ys):
        wgt = 1 / (y * y)
        s11 += wgt * x1 * x1; s12 += wgt * x1 * x2; s22 += wgt * x2 * x2
        b1 += wgt * x1 * y; b2 += wgt * x2 * y
    det = s11 * s22 - s12 * s12
    alpha = (b1 * s22 - b2 * s12) / det
    inv_eta = (s11 * b2 - s12 * b1) / det
    return max(alpha, 0.0), 1 / inv_eta


# --- 2. compute ---

def skein_step_seconds(b, tmp, extra, limit, epochs, world, link=None):
    run = os.path.join(tmp, "run" + str(time.monotonic_ns()))
    args = ["--config", os.path.join(ROOT, "examples/fashion_mnist_ddp.json"), "--run-dir", run,
            "--set", "model.hidden=[1024,1024]", "--set", f"data.limit={limit}", "--set", "valid_split=0",
            "--set", f"max_epochs={epochs}", "--set", "callbacks=[]", "--set", "history.plugin=local"]
    if world > 1:
        args += ["--nproc-per-node", str(world)]
    else:
        args += ["--set", "parallel.plugin=none"]
    sh([f"{b}/bin/skein", "train"] + args + extra, netns=True, link=link)
    with open(os.path.join(run, "history.json")) as f:
        history = json.load(f)
    steps = math.ceil(math.ceil(limit / world) / BATCH)
    return statistics.median(e["dur"] for e in history[1:]) / steps


def calibrate(compute, loopback, none_step, psgd_step, cores):
    """b (overlap share) and PowerSGD's own work per step from unshaped W = 2 runs."""
    c = max(1.0, 2 / cores)
    tc = c * compute
    comm = allreduce_seconds(PARAMS, 2, loopback, True)
    overlap = min(1.0, max(0.0, (tc + comm - none_step) / tc))
    psgd_comm = powersgd_comm_seconds(2, loopback, True)
    work = max(0.0, (psgd_step - tc - psgd_comm) / c)
    return overlap, work


# --- 3. the model ---

def allreduce_seconds(n, world, link, loopback):
    """One ring all-reduce of n float32: on loopback (one shared bucket) or
    on a switched cluster (a link per machine)."""
    alpha, eta, rate = link
    bytes_on_link = 2 * (world - 1) * n * 4 / (1 if loopback else world)
    return 2 * (world - 1) * alpha + bytes_on_link * 8 / (eta * rate)


def powersgd_comm_seconds(world, link, loopback):
    """P, then Q (each one all-reduce of every matrix's factor), and the vectors."""
    p = sum(m * RANK for m, _ in WIDE)
    q = sum(n * RANK for _, n in WIDE)
    return sum(allreduce_seconds(x, world, link, loopback) for x in (p, q, VECTORS))


def step_seconds(kind, world, compute, calibrated, link, loopback, cores=None):
    overlap, psgd_work = calibrated
    c = max(1.0, world / cores) if cores else 1.0
    tc = c * compute
    if world == 1:
        return tc
    if kind == "ddp":
        comm = allreduce_seconds(PARAMS, world, link, loopback)
        return tc + max(0.0, comm - overlap * tc)
    return tc + c * psgd_work + powersgd_comm_seconds(world, link, loopback)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--links", default="1gbit,10gbit")
    ap.add_argument("--limit", type=int, default=8000, help="training images of the measured runs")
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--png", default=os.path.join(ROOT, "docs/scaling_model.png"))
    ap.add_argument("--out")
    ap.add_argument("--allreduce-worlds", type=int, help=argparse.SUPPRESS)  # the measuring child
    ap.add_argument("--reps", type=int, default=15, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.allreduce_worlds:
        return measure_allreduce_here(a.allreduce_worlds, a.reps)
    links = a.links.split(",")
    cores = os.cpu_count()
    lines = [f"- date: {time.strftime('%Y-%m-%d %H:%M')}",
             f"- machine: {cores} cores; command: `python3 bench/scaling_model.py {' '.join(sys.argv[1:])}`".rstrip(), ""]
    fitted = {}
    lines += ["| link | W | elements | measured ms | model ms |", "|---|---|---|---|---|"]
    for link in [None] + links:
        rate = RATES[link] if link else LOOPBACK_NOMINAL
        points = [(w, n, t) for w in (2, 4) for n, t in measure_allreduce(link, w).items()]
        fitted[link] = (*fit_link(points, rate), rate)
        for w, n, t in points:
            lines.append(f"| {link or 'loopback'} | {w} | {n} | {t * 1e3:.2f} | "
                         f"{allreduce_seconds(n, w, fitted[link], True) * 1e3:.2f} |")
    lines += ["", "| link | alpha µs | eta (share of the rate reached) |", "|---|---|---|"]
    lines += [f"| {l or 'loopback (nominal 1 Gbit/s)'} | {f[0] * 1e6:.0f} | {f[1]:.2f} |" for l, f in fitted.items()]
    with tempfile.TemporaryDirectory(prefix="skein-scaling-") as tmp:
        kinds = (("ddp", ["--set", "parallel.compression=none"]),
                 ("powersgd", ["--set", "parallel.compression=powersgd", "--set", f"parallel.powersgd_rank={RANK}",
                               "--set", "parallel.powersgd_warmup_steps=10"]))
        compute = skein_step_seconds(a.build, tmp, [], a.limit, a.epochs, 1)
        none2, psgd2 = (skein_step_seconds(a.build, tmp, extra, a.limit, a.epochs, 2) for _, extra in kinds)
        calibrated = calibrate(compute, fitted[None], none2, psgd2, cores)
        lines += ["", f"Compute per step (1 process, batch {BATCH}): {compute * 1e3:.2f} ms. Calibrated on unshaped "
                      f"loopback at W=2 ({none2 * 1e3:.1f} ms a step with `none`, {psgd2 * 1e3:.1f} with `powersgd`): "
                      f"ddp overlaps {calibrated[0] * 100:.0f} % of the compute; PowerSGD's own work "
                      f"{calibrated[1] * 1e3:.2f} ms a step.", "",
                  "| link | W | compression | measured s/step | model s/step | error |", "|---|---|---|---|---|---|"]
        for link in links:
            for w in (2, 4):
                for kind, extra in kinds:
                    measured = skein_step_seconds(a.build, tmp, extra, a.limit, a.epochs, w, link)
                    model = step_seconds(kind, w, compute, calibrated, fitted[link], True, cores)
                    lines.append(f"| {link} | {w} | {kind if kind == 'powersgd' else 'none'} | {measured:.4f} | "
                                 f"{model:.4f} | {(model / measured - 1) * 100:+.0f} % |")
    # 5. The cluster: the fitted latency and efficiency, one process a machine.
    alpha = statistics.median(fitted[l][0] for l in links)
    eta = statistics.median(fitted[l][1] for l in links)
    worlds = [2 ** k for k in range(1, 9)]
    curves = {}
    lines += ["", "| link | compression | " + " | ".join(f"W={w}" for w in worlds) + " |",
              "|---|---|" + "---|" * len(worlds)]
    for name, rate in RATES.items():
        for kind in ("ddp", "powersgd"):
            eff = [compute / step_seconds(kind, w, compute, calibrated, (alpha, eta, rate), False) for w in worlds]
            curves[(name, kind)] = eff
            lines.append(f"| {name} | {kind if kind == 'powersgd' else 'none'} | " +
                         " | ".join(f"{e * 100:.0f} %" for e in eff) + " |")
    text = "\n".join(lines) + "\n"
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for (name, kind), eff in curves.items():
        ax.plot(worlds, [e * 100 for e in eff], marker="o", linestyle="-" if kind == "ddp" else "--",
                label=f"{'ddp' if kind == 'ddp' else 'ddp + powersgd r4'}, {name[:-4]} Gbit/s")
    ax.set_xscale("log", base=2)
    ax.set_xticks(worlds)
    ax.set_xticklabels([str(w) for w in worlds])
    ax.set_xlabel("machines (one process each)")
    ax.set_ylabel("scaling efficiency %")
    ax.set_ylim(0, 105)
    ax.set_title("Wide MLP 784-1024-1024-10, batch 64 per process: model")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(a.png, dpi=110)


if __name__ == "__main__":
    main()
