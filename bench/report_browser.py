#!/usr/bin/env python3
"""report.html of a long run: its size, what rewriting it at every epoch
costs the run, and how long a headless browser takes to render it
(docs/BENCHMARKS.md, section 17).

  /usr/bin/python3 bench/report_browser.py [--epochs 1000] [--metrics 50] [--build build]

A tiny run (one train batch an epoch) of N epochs whose history holds M
values an epoch (the loop's own, such as train_loss, valid_acc and dur, the
rest recorded by the test probe callback), with the `report` callback and
without it, side by side. Chromium (Debian's, headless) loads the final page
and dumps its DOM, and takes a screenshot; each timed against a page of the
same run's first 10 epochs' size for reference. Median of 3 loads.
"""
import argparse, json, os, shutil, subprocess, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def values_an_epoch(run_dir):
    with open(os.path.join(run_dir, "history.json")) as f:
        return len({k for e in json.load(f) for k in e if isinstance(e[k], (int, float)) and k != "epoch"})


def train(skein, plugins, tmp, name, epochs, extra, report):
    cfg = {
        "model": {"plugin": "mlp", "hidden": [8]},
        "data": {"plugin": "synthetic", "samples": 80, "test_samples": 16, "shape": [4], "classes": 2},
        "optimizer": {"name": "sgd", "lr": 0.01},
        "batch_size": 64, "max_epochs": epochs, "seed": 0, "valid_split": 0.2,
        "callbacks": [{"plugin": "probe_callback", "record_events": False, "epoch_metrics": extra}]
                     + ([{"plugin": "report"}] if report else []),
    }
    path = os.path.join(tmp, name + ".json")
    with open(path, "w") as f:
        json.dump(cfg, f)
    run_dir = os.path.join(tmp, name)
    start = time.time()
    subprocess.run([skein, "train", "--plugin-dir", plugins, "--config", path, "--run-dir", run_dir],
                   check=True, stdout=subprocess.DEVNULL)
    return time.time() - start, run_dir


def browser_seconds(browser, args):
    times = []
    for _ in range(3):
        start = time.time()
        subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars"] + args,
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append(time.time() - start)
    return sorted(times)[1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--epochs", type=int, default=1000)
    ap.add_argument("--metrics", type=int, default=50)
    a = ap.parse_args()
    skein = os.path.join(a.build, "bin", "skein")
    plugins = os.path.join(a.build, "tests", "plugins")
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    tmp = tempfile.mkdtemp(prefix="skein-report-bench-")
    _, bare = train(skein, plugins, tmp, "bare", 2, 0, False)
    extra = a.metrics - values_an_epoch(bare)  # the loop's own values, the rest the probe's
    without, _ = train(skein, plugins, tmp, "without", a.epochs, extra, False)
    with_report, run_dir = train(skein, plugins, tmp, "with", a.epochs, extra, True)
    _, small_dir = train(skein, plugins, tmp, "small", 10, extra, True)
    rows = []
    for label, d in (("10 epochs", small_dir), (f"{a.epochs} epochs", run_dir)):
        page = os.path.join(d, "report.html")
        dom = browser_seconds(browser, ["--dump-dom", "file://" + page])
        shot = browser_seconds(browser, ["--window-size=1200,2000", "--screenshot=" + os.path.join(tmp, "s.png"),
                                         "file://" + page])
        rows.append((label, os.path.getsize(page) / 1024, dom, shot))
    print(f"{a.epochs} epochs, {values_an_epoch(run_dir)} values an epoch: run without report {without:.1f} s, "
          f"with report {with_report:.1f} s ({with_report - without:+.1f} s, "
          f"{1000 * (with_report - without) / a.epochs:.2f} ms an epoch)")
    print("\n| page | size | chromium: load and dump the DOM | chromium: screenshot |")
    print("|---|---|---|---|")
    for label, kib, dom, shot in rows:
        print(f"| {label} | {kib:.0f} KiB | {dom:.2f} s | {shot:.2f} s |")


if __name__ == "__main__":
    main()
