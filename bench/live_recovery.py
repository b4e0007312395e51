#!/usr/bin/env python3
"""Live recovery vs a restart from the newest step checkpoint, on one kill
schedule (docs/BENCHMARKS.md, section 16).

  unshare -rn sh -c 'ip link set lo up && python3 bench/live_recovery.py [--epochs N] [--build build] [--parallel zero]'

Fashion-MNIST's MLP (examples/fault_tolerant_ddp.json) on 3 processes under
`skein train`. Each run does the same work (N epochs); a kill schedule sends
SIGKILL to a random worker (rank 0 too) every K seconds. Modes: `live`
(ddp's live_recovery, a replacement started by the launcher) and `restart`
(plain ddp, also a step checkpoint every 50 steps, --max-restarts: every
worker restarted from the newest); --parallel zero: the same with zero
(stage 1), whose live recovery mirrors each optimizer shard on a second rank. Reported: committed steps per wall-clock second relative
to the run without kills (the same work in less time is more steps a
second), seconds lost per kill, and for live recovery the seconds from a
kill to the next committed step and to the replacement's joining (run.json).
"""
import argparse, json, os, random, signal, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def config(live, epochs, parallel):
    with open(os.path.join(ROOT, "examples", "fault_tolerant_ddp.json")) as f:
        cfg = json.load(f)
    cfg["max_epochs"] = epochs
    cfg["parallel"]["plugin"] = parallel
    if not live:  # the same checkpoints, and one every 50 steps to restart from
        cfg["parallel"] = {"plugin": parallel}
        cfg["callbacks"] = [{"plugin": "print_log"}, {"plugin": "checkpoint", "every_n_steps": 50}]
    return cfg


def recovered(log, kills, live):
    """Whether the run is whole again after `kills` kills: live recovery's
    replacements all joined (a replacement not yet taken in is no member to
    kill); a restart's workers are all new processes anyway."""
    if not live or kills == 0:
        return True
    try:
        with open(log) as f:
            return f.read().count("a replacement joins") >= kills
    except OSError:
        return False


def run(skein, tmp, name, cfg, every, seed, live=False):
    """One run; kills a random worker every `every` seconds (0: never), once
    the last kill is recovered from.
    Returns (seconds, kill times, run.json)."""
    path = os.path.join(tmp, name + ".json")
    with open(path, "w") as f:
        json.dump(cfg, f)
    run_dir = os.path.join(tmp, name)
    out = open(os.path.join(tmp, name + ".log"), "w")
    start = time.time()
    launcher = subprocess.Popen([skein, "train", path, "--nproc-per-node", "3", "--run-dir", run_dir,
                                 "--max-restarts", "100", "--timeout", "60"], stdout=out, stderr=subprocess.STDOUT)
    rng = random.Random(seed)
    kills = []
    log = os.path.join(run_dir, "train.log")
    next_kill = start + every if every else None
    while launcher.poll() is None:
        time.sleep(0.05)
        if next_kill and time.time() >= next_kill and recovered(log, len(kills), live):
            workers = subprocess.run(["pgrep", "-P", str(launcher.pid)], capture_output=True,
                                     text=True).stdout.split()
            if len(workers) == 3:
                os.kill(int(rng.choice(workers)), signal.SIGKILL)
                kills.append(time.time())
                next_kill += every
    seconds = time.time() - start
    out.close()
    if launcher.returncode != 0:
        sys.exit(f"{name}: exit {launcher.returncode}, see {out.name}")
    with open(os.path.join(run_dir, "run.json")) as f:
        report = json.load(f)
    with open(os.path.join(run_dir, "results.json")) as f:
        report["test_accuracy"] = json.load(f)["test_accuracy"]
    return seconds, kills, report


def live_delays(kills, report):
    """Seconds from each kill to the next committed step, and to its
    replacement's joining: each record against the last kill before it."""
    def last_kill_before(t):
        before = [k for k in kills if k <= t]
        return before[-1] if before else None
    to_step, to_join = [], []
    for r in report.get("recoveries", []):
        k = last_kill_before(r["unix_time"])
        if k is None:
            continue
        if r["event"] == "lost" and "seconds_lost" in r:
            to_step.append(r["unix_time"] + r["seconds_lost"] - k)
        elif r["event"] == "joined":
            to_join.append(r["unix_time"] - k)
    return to_step, to_join


def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2] if xs else float("nan")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--epochs", type=int, default=24)
    ap.add_argument("--every", default="30,10", help="kill intervals in seconds, comma-separated")
    ap.add_argument("--parallel", default="ddp", choices=["ddp", "zero"])
    a = ap.parse_args()
    skein = os.path.join(a.build, "bin", "skein")
    tmp = tempfile.mkdtemp(prefix="skein-live-bench-")
    rows = []
    clean, _, clean_report = run(skein, tmp, "clean", config(True, a.epochs, a.parallel), 0, 0)
    clean_restart, _, _ = run(skein, tmp, "clean_restart", config(False, a.epochs, a.parallel), 0, 0)
    print(f"no kills: live-recovery config {clean:.1f} s, restart config {clean_restart:.1f} s, "
          f"test accuracy {clean_report['test_accuracy']:.4f}", flush=True)
    for every in [float(x) for x in a.every.split(",")]:
        for mode in ("live", "restart"):
            base = clean if mode == "live" else clean_restart
            seconds, kills, report = run(skein, tmp, f"{mode}_{every:g}", config(mode == "live", a.epochs, a.parallel), every, 1,
                                         mode == "live")
            row = {"every_s": every, "mode": mode, "seconds": seconds, "kills": len(kills),
                   "relative": base / seconds, "lost_per_kill": (seconds - base) / max(1, len(kills)),
                   "test_accuracy": report["test_accuracy"]}
            if mode == "live":
                to_step, to_join = live_delays(kills, report)
                row["to_step_median"] = median(to_step)
                row["to_step_max"] = max(to_step) if to_step else float("nan")
                row["to_join_median"] = median(to_join)
            rows.append(row)
            print(json.dumps(row), flush=True)
    print("\n| kill every | mode | kills | wall s | steps/s vs no kills | s lost per kill | kill -> next step (median, max) | kill -> replacement joined (median) | test accuracy |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        live = r["mode"] == "live"
        print(f"| {r['every_s']:g} s | {r['mode']} | {r['kills']} | {r['seconds']:.1f} | {100 * r['relative']:.0f} % | "
              f"{r['lost_per_kill']:.2f} | " +
              (f"{r['to_step_median']:.2f} s, {r['to_step_max']:.2f} s | {r['to_join_median']:.2f} s |" if live else "- | - |") +
              f" {r['test_accuracy']:.4f} |")


if __name__ == "__main__":
    main()
