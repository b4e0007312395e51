#!/usr/bin/env python3
"""A scaling model of Skein's data-parallel training (issue 37;
docs/BENCHMARKS.md, section 14): fitted here, checked against measured runs
on shaped links, extrapolated to 256 machines, and plotted.

  /usr/bin/python3 bench/scaling_model.py [--build build] [--links 1gbit,10gbit]
      [--limit 8000] [--epochs 4] [--png docs/scaling_model.png] [--out FILE]
      [--measurements FILE.json]

1. Gloo's all-reduce (this Python's torch: Debian's 1.13 is the libtorch and
   Gloo that build/ links) of float32 tensors of 2^12 to 2^22 elements on
   W = 2 and 4 processes, on unshaped loopback and on loopback shaped by tc
   to each link rate (bench/run.py's shaped(); median of repetitions).
   A ring all-reduce of n values moves 2 (W - 1) n 4 bytes in all, and on
   loopback every byte of every rank crosses the one token bucket. Fitted:
   - alpha per link and W, from the two smallest sizes (the quicker):
     T / (2 (W - 1)). On 2
     cores W = 4 is oversubscribed, and its "latency" is mostly waiting
     for a peer to be scheduled (~1 ms a round, against ~0.1 at W = 2);
   - eta per link (the share of the rate reached), from the sizes that
     are bandwidth-bound (8 token buckets or more);
   - unshaped loopback's own speed per W (its CPU cost: a shaped link can
     be no faster than loopback itself).
2. Compute: seconds per step (batch 64) of the wide MLP 784-1024-1024-10
   (1.86 M parameters) trained by `skein train` on 1 process. Calibrated
   on unshaped loopback at W = 2 (never on the shaped runs that check the
   model), as a difference to the microbenchmark's all-reduce: ddp's extra
   cost a step (the copies into and out of its buckets, the hooks, waiting
   for the slower rank, less what overlapping backward hides), from a
   `none` run; PowerSGD's own work a step, from a `powersgd` run.
3. The model of a step: T = c (Tc + extra) + comm, with c = max(1, W /
   cores) (processes beyond the cores share them). comm is the sum over the
   step's collectives (ddp: one per bucket, 2 for this model; powersgd: the
   vectors' bucket, then P and Q) of 2 (W - 1) alpha + bytes / bandwidth,
   where the bytes of the step beyond the token bucket's burst wait for the
   rate (the compute refills the bucket between steps), and no collective
   is faster than on unshaped loopback.
4. Checked against `skein train` (ddp, compression none and powersgd) at
   W = 2 and 4 on the same shaped links: measured vs predicted seconds per
   step (goal: within 15 %).
5. Extrapolated to a cluster of W machines, one process each, each with its
   own link of rate R through a switch (every NIC carries 2 (W - 1) / W n 4
   bytes of a ring all-reduce; no token credit): alpha of W = 2 and eta
   (medians over the shaped links), and the calibrated compute, extra and
   PowerSGD work of one process on its own core: step time and scaling
   efficiency Tc / T of ddp and powersgd for W = 2 ... 256 at 1, 10 and
   100 Gbit/s, plotted (matplotlib: `scripts/setup.sh --bench`).

--measurements FILE.json keeps what was measured (all-reduces and runs):
given an existing file, the model is fitted and checked again from it
without measuring.
"""
import argparse, json, math, os, socket, statistics, sys, tempfile, time

from run import burst_bytes, sh  # bench/run.py: OMP_NUM_THREADS=1, a private network, a shaped link

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PY = sys.executable
WIDE = [(1024, 784), (1024, 1024), (10, 1024)]  # the wide MLP's weight matrices
VECTORS = 1024 + 1024 + 10                       # its biases
PARAMS = sum(m * n for m, n in WIDE) + VECTORS
RANK = 4                                         # powersgd_rank
BATCH = 64
SIZES = [1 << k for k in range(12, 23, 2)]
RATES = {"1gbit": 1e9, "10gbit": 1e10, "100gbit": 1e11}
# ddp's buckets of the wide MLP at the default caps (1 MiB first, then 25
# MiB; parameters in reverse registration order, as gradient_reducer.cpp
# forms them): the last layer and fc2's bias, then the rest.
DDP_BUCKETS = [10 + 10 * 1024 + 1024, 1024 * 1024 + 1024 + 1024 * 784]
# powersgd's collectives a step: the vectors' bucket, then P and Q.
PSGD_COLLECTIVES = [VECTORS, sum(m * RANK for m, _ in WIDE), sum(n * RANK for _, n in WIDE)]


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


def ring_bytes(n, world):
    """Bytes a ring all-reduce of n float32 moves in all (every rank's)."""
    return 2 * (world - 1) * n * 4


def latency(times, world):
    """alpha: a round of the ring, from the quicker of the two smallest sizes
    (one slow sample there is scheduling noise, not latency)."""
    return min(times[n] for n in sorted(times)[:2]) / (2 * (world - 1))


def fit_loopback(measured):
    """Unshaped loopback, per W: alpha, and the bytes
    per second of the largest."""
    fit = {"alpha": {}, "bw": {}}
    for w, times in measured.items():
        fit["alpha"][w] = latency(times, w)
        big = max(times)
        fit["bw"][w] = ring_bytes(big, w) / (times[big] - 2 * (w - 1) * fit["alpha"][w])
    return fit


def fit_link(measured, rate, burst):
    """A shaped link: alpha per W; eta from the sizes
    that are bandwidth-bound (8 token buckets or more)."""
    alpha = {w: latency(times, w) for w, times in measured.items()}
    etas = [ring_bytes(n, w) * 8 / (rate * (t - 2 * (w - 1) * alpha[w]))
            for w, times in measured.items() for n, t in times.items() if ring_bytes(n, w) >= 8 * burst]
    return {"alpha": alpha, "eta": statistics.median(etas), "rate": rate, "burst": burst}


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
    """ddp's extra cost a step and PowerSGD's own work a step, from the
    unshaped W = 2 runs (the difference to the microbenchmark's all-reduces)."""
    c = max(1.0, 2 / cores)
    extra = (none_step - comm_seconds(DDP_BUCKETS, 2, loopback, None)) / c - compute
    work = (psgd_step - comm_seconds(PSGD_COLLECTIVES, 2, loopback, None)) / c - compute - extra
    return extra, max(0.0, work)


# --- 3. the model ---

def comm_seconds(collectives, world, loopback, link, credit=True):
    """The all-reduces of a step (their sizes in values) on loopback, unshaped
    (link None) or shaped: latency a round, and every byte at loopback's own
    speed or, beyond the token bucket's burst (`credit`: it refilled during
    the compute), at the link's rate, whichever is slower."""
    total = sum(ring_bytes(n, world) for n in collectives)
    alpha = (link or loopback)["alpha"][world]
    seconds = total / loopback["bw"][world]
    if link:
        beyond = max(0.0, total - (link["burst"] if credit else 0))
        seconds = max(seconds, beyond * 8 / (link["eta"] * link["rate"]))
    return len(collectives) * 2 * (world - 1) * alpha + seconds


def cluster_comm_seconds(collectives, world, alpha, eta, rate):
    """The same on W machines, each with a link of its own: a NIC carries
    2 (W - 1) / W n 4 bytes of each ring all-reduce."""
    return sum(2 * (world - 1) * alpha + ring_bytes(n, world) / world * 8 / (eta * rate) for n in collectives)


def step_seconds(kind, world, compute, calibrated, comm):
    """comm(collectives): seconds of a step's all-reduces on the link."""
    extra, psgd_work = calibrated
    if world == 1:
        return compute
    if kind == "ddp":
        return compute + extra + comm(DDP_BUCKETS)
    return compute + extra + psgd_work + comm(PSGD_COLLECTIVES)


def measure(a, links, cores):
    """Everything the model is fitted to and checked against."""
    m = {"cores": cores, "allreduce": {}, "runs": {}}
    for link in ["loopback"] + links:
        shaped = None if link == "loopback" else link
        m["allreduce"][link] = {str(w): measure_allreduce(shaped, w) for w in (2, 4)}
    with tempfile.TemporaryDirectory(prefix="skein-scaling-") as tmp:
        m["compute"] = skein_step_seconds(a.build, tmp, [], a.limit, a.epochs, 1)
        for link in ["loopback"] + links:
            shaped = None if link == "loopback" else link
            for w in ((2,) if link == "loopback" else (2, 4)):
                for kind, extra in KINDS:
                    m["runs"].setdefault(link, {}).setdefault(str(w), {})[kind] = \
                        skein_step_seconds(a.build, tmp, extra, a.limit, a.epochs, w, shaped)
    return m


KINDS = (("ddp", ["--set", "parallel.compression=none"]),
         ("powersgd", ["--set", "parallel.compression=powersgd", "--set", f"parallel.powersgd_rank={RANK}",
                       "--set", "parallel.powersgd_warmup_steps=10"]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--links", default="1gbit,10gbit")
    ap.add_argument("--limit", type=int, default=8000, help="training images of the measured runs")
    ap.add_argument("--epochs", type=int, default=4, help="epochs of each run; the median of all but the first is taken")
    ap.add_argument("--png", default=os.path.join(ROOT, "docs/scaling_model.png"))
    ap.add_argument("--out")
    ap.add_argument("--measurements", help="JSON of what was measured: read if it exists, else written")
    ap.add_argument("--allreduce-worlds", type=int, help=argparse.SUPPRESS)  # the measuring child
    ap.add_argument("--reps", type=int, default=15, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.allreduce_worlds:
        return measure_allreduce_here(a.allreduce_worlds, a.reps)
    links = a.links.split(",")
    if a.measurements and os.path.exists(a.measurements):
        with open(a.measurements) as f:
            m = json.load(f)
        links = [l for l in m["allreduce"] if l != "loopback"]
    else:
        m = measure(a, links, os.cpu_count())
        if a.measurements:
            with open(a.measurements, "w") as f:
                json.dump(m, f, indent=1)
    cores = m["cores"]
    allreduce = {l: {int(w): {int(n): t for n, t in times.items()} for w, times in per_w.items()}
                 for l, per_w in m["allreduce"].items()}
    lines = [f"- date: {time.strftime('%Y-%m-%d %H:%M')}",
             f"- machine: {cores} cores; command: `python3 bench/scaling_model.py {' '.join(sys.argv[1:])}`".rstrip(), ""]
    loopback = fit_loopback(allreduce["loopback"])
    fitted = {l: fit_link(allreduce[l], RATES[l], burst_bytes(RATES[l])) for l in links}
    lines += ["| link | W | elements | measured ms | model ms |", "|---|---|---|---|---|"]
    for l in ["loopback"] + links:
        for w, times in allreduce[l].items():
            for n, t in times.items():
                model = comm_seconds([n], w, loopback, fitted.get(l), credit=False)
                lines.append(f"| {l} | {w} | {n} | {t * 1e3:.2f} | {model * 1e3:.2f} |")
    lines += ["", "| link | alpha W=2 µs | alpha W=4 µs | eta (share of the rate reached) |", "|---|---|---|---|"]
    lines.append(f"| loopback | {loopback['alpha'][2] * 1e6:.0f} | {loopback['alpha'][4] * 1e6:.0f} | "
                 f"{loopback['bw'][2] / 1e6:.0f} / {loopback['bw'][4] / 1e6:.0f} MB/s (W=2 / 4) |")
    lines += [f"| {l} | {f['alpha'][2] * 1e6:.0f} | {f['alpha'][4] * 1e6:.0f} | {f['eta']:.2f} |"
              for l, f in fitted.items()]
    compute = m["compute"]
    none2, psgd2 = (m["runs"]["loopback"]["2"][k] for k, _ in KINDS)
    calibrated = calibrate(compute, loopback, none2, psgd2, cores)
    lines += ["", f"Compute per step (1 process, batch {BATCH}): {compute * 1e3:.2f} ms. Calibrated on unshaped "
                  f"loopback at W=2 ({none2 * 1e3:.1f} ms a step with `none`, {psgd2 * 1e3:.1f} with `powersgd`): "
                  f"ddp's extra cost {calibrated[0] * 1e3:.2f} ms a step; PowerSGD's own work "
                  f"{calibrated[1] * 1e3:.2f} ms a step.", "",
              "| link | W | compression | measured s/step | model s/step | error |", "|---|---|---|---|---|---|"]
    errors = []
    for l in links:
        for w in (2, 4):
            c = max(1.0, w / cores)
            for kind, _ in KINDS:
                measured = m["runs"][l][str(w)][kind]
                per_process = step_seconds(kind, w, compute, calibrated, lambda coll: 0.0)
                model = c * per_process + comm_seconds(
                    DDP_BUCKETS if kind == "ddp" else PSGD_COLLECTIVES, w, loopback, fitted[l])
                errors.append(model / measured - 1)
                lines.append(f"| {l} | {w} | {kind if kind == 'powersgd' else 'none'} | {measured:.4f} | "
                             f"{model:.4f} | {errors[-1] * 100:+.0f} % |")
    within = sum(abs(e) <= 0.15 for e in errors)
    lines += ["", f"{within} of {len(errors)} within 15 %; largest error {max(errors, key=abs) * 100:+.0f} %."]
    # 5. The cluster: one process a machine, the latency of W = 2 (not
    # oversubscribed) and the efficiency fitted on the shaped links.
    alpha = statistics.median(f["alpha"][2] for f in fitted.values())
    eta = statistics.median(f["eta"] for f in fitted.values())
    worlds = [2 ** k for k in range(1, 9)]
    curves = {}
    lines += ["", "| link | compression | " + " | ".join(f"W={w}" for w in worlds) + " |",
              "|---|---|" + "---|" * len(worlds)]
    for name, rate in RATES.items():
        for kind, _ in KINDS:
            eff = [compute / step_seconds(kind, w, compute, calibrated,
                                          lambda coll, w=w: cluster_comm_seconds(coll, w, alpha, eta, rate))
                   for w in worlds]
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
