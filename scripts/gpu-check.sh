#!/usr/bin/env bash
# Proves Skein on a GPU machine, from the bundle scripts/gpu-bundle.sh built
# (docs/development.md, "Checking on a GPU machine"). Run from the repository
# root there, e.g. through the device tool:
#
#   run(command="scripts/gpu-check.sh", carry=["build-gpu/bundle"], timeout_s=600)
#
#   scripts/gpu-check.sh           the whole check (steps below), within GPU_CHECK_BUDGET_S
#   scripts/gpu-check.sh --smoke   the bundle's runtime only: ldd of every file, skein
#                                  --version, one tiny run (scripts/gpu-bundle.sh runs it)
#
# Steps of the whole check, each bounded by `timeout` (a failed step is a FAIL
# row; the script goes on), on Fashion-MNIST from the bundle (data/):
#   a  the main example (examples/fashion_mnist.json) on the GPU and on the
#      CPU: test accuracies within 1 point of each other
#   b  examples/fashion_mnist_ddp.json on 2 processes sharing the one GPU:
#      ddp with NCCL, or, where NCCL refuses two ranks on one device, Gloo
#      with CUDA tensors (the row says which)
#   c  precision 16-mixed and bf16-mixed on the GPU (16-mixed: skipped steps)
#   d  a checkpoint written by a GPU run (2 epochs) resumed on the CPU (3rd)
#   e  throughput: bench/vs_pytorch.py --only speed --device cuda, Skein
#      against the image's PyTorch on the same models, side by side
# Prints one table at the end (exit 1 if a row is FAIL); with $OUT set, also
# writes it to $OUT/gpu-check.md after every step (so a run cut short still
# returns what it did), with each step's log in $OUT/gpu-check-logs/.
#
# Environment:
#   GPU_CHECK_PYTHON    the image's Python (default /opt/torch/.venv/bin/python): its
#                       torch's lib/ (and its nvidia/*/lib) go on LD_LIBRARY_PATH, in
#                       front of what is there; it runs the PyTorch side of e
#   GPU_CHECK_BUNDLE    the bundle (default build-gpu/bundle)
#   GPU_CHECK_DEVICE    cuda (default), cuda:N; cpu: a dry run of the flow on a machine
#                       without a GPU (16-mixed is skipped); none: no device key at all
#                       (trainers from before the key). --smoke's default: none
#   GPU_CHECK_EPOCHS    epochs of a, b, c (default 5, the example's)
#   GPU_CHECK_LIMIT     data.limit of every run (default 0: all 60000 + 10000 images)
#   GPU_CHECK_BUDGET_S  deadline of the whole check (default 480): a step gets at most
#                       what is left; one that cannot start in time is a SKIP row
set -euo pipefail
cd "$(dirname "$0")/.."
mode=full
case "${1:-}" in
  "") ;;
  --smoke) mode=smoke ;;
  *) echo "usage: scripts/gpu-check.sh [--smoke]" >&2; exit 2 ;;
esac
die() { echo "gpu-check: $*" >&2; exit 2; }
PY=${GPU_CHECK_PYTHON:-/opt/torch/.venv/bin/python}
bundle=${GPU_CHECK_BUNDLE:-build-gpu/bundle}
if [ "$mode" = smoke ]; then dev=${GPU_CHECK_DEVICE:-none}; else dev=${GPU_CHECK_DEVICE:-cuda}; fi
epochs=${GPU_CHECK_EPOCHS:-5}
limit=${GPU_CHECK_LIMIT:-0}
start=$(date +%s)
deadline=$((start + ${GPU_CHECK_BUDGET_S:-480}))
case $dev in cuda | cuda:[0-9]* | cpu | none) ;; *) die "GPU_CHECK_DEVICE must be cuda, cuda:N, cpu or none, not '$dev'" ;; esac
[ -x "$bundle/bin/skein" ] || die "no bundle at $bundle: build it with scripts/gpu-bundle.sh and carry it here"
bundle=$(cd "$bundle" && pwd)
data=$bundle/data/fashion-mnist
[ -x "$PY" ] || die "no Python at $PY (set GPU_CHECK_PYTHON): libtorch is found through its torch"
torch_dir=$("$PY" -c 'import os, torch; print(os.path.dirname(torch.__file__))' 2>/dev/null) ||
  die "$PY cannot import torch"

work=$(mktemp -d "${TMPDIR:-/tmp}/skein-gpu-check.XXXXXX")
trap 'rm -rf "$work"' EXIT
logs=${OUT:+$OUT/gpu-check-logs}
logs=${logs:-$work/logs}
mkdir -p "$logs"

# What the runs need of their results, read by the image's Python.
cat >"$work/get.py" <<'EOF'
import json, os, statistics, sys
run, what = sys.argv[1], sys.argv[2]
def load(name, default):
    try:
        with open(os.path.join(run, name)) as f:
            return json.load(f)
    except (OSError, ValueError):
        return default
results, history = load("results.json", {}), load("history.json", [])
if what == "acc":
    v = results.get("test_accuracy")
    print(f"{v:.4f}" if isinstance(v, (int, float)) else "")
elif what == "device":
    print(results.get("device", ""))
elif what == "epochs":
    print(len(history))
elif what == "skipped":
    v = [e["skipped_steps"] for e in history if "skipped_steps" in e]
    print(sum(v) if v else "")
elif what == "s_per_epoch":  # median of epochs 2+ (the first pays for warm-up)
    d = [e["dur"] for e in history if "dur" in e]
    print(f"{statistics.median(d[1:] or d):.2f}" if d else "")
EOF
get() { "$PY" "$work/get.py" "$@"; }
points() { awk -v a="$1" -v b="$2" 'BEGIN { d = (a - b) * 100; printf "%.2f", d < 0 ? -d : d }'; }
trim() { sed 's/^ *//; s/ *$//; s/  */ /g' <<<"$1"; }
within() { awk -v d="$1" -v m="$2" 'BEGIN { exit !(d <= m) }'; }

# The table: one row per step, rewritten to $OUT after each.
rows=()
failed=0
gpu=
if command -v nvidia-smi >/dev/null; then
  gpu=$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -1 || true)
fi
when=$(date -u '+%Y-%m-%d %H:%M UTC')
header() {
  echo "Skein GPU check ($mode$([ "$dev" = cuda ] || echo ", GPU_CHECK_DEVICE=$dev: DRY RUN, no GPU proved")), $when, $(nproc) cores, GPU: ${gpu:-none}"
  echo "bundle: $(sed -n 's/^commit: //p' "$bundle/BUNDLE.txt" 2>/dev/null), $(sed -n 's/^built with: //p' "$bundle/BUNDLE.txt" 2>/dev/null | cut -d' ' -f1-2)"
  echo "image: $PY, torch $torch_version ($torch_dir)"
  echo
  echo "| step | result | detail | s |"
  echo "|---|---|---|---|"
}
table() { header; printf '%s\n' "${rows[@]}"; }
row() {  # step result detail seconds
  rows+=("| $1 | $2 | ${3//|//} | $4 |")
  [ "$2" != FAIL ] || failed=1
  if [ -n "${OUT:-}" ]; then table >"$OUT/gpu-check.md"; fi
  echo "gpu-check: $1: $2: $3"
}
why() {  # the line of a log that says what went wrong
  local line
  if grep -q '^Traceback' "$1"; then  # Python's: the exception, its last line
    line=$(grep -E '^[A-Za-z_.]+(Error|Exception|Interrupt)\b' "$1" | tail -n1)
  else
    line=$(grep -m1 -iE 'error|refused|not found|what\(\)|terminate' "$1" || true)
  fi
  [ -n "$line" ] || line=$(tail -n1 "$1")
  line=$(sed -E 's/^skein: error: worker (rank [0-9]+) on .* with exit code [0-9]+: /\1: /' <<<"$line")
  echo "${line:0:240}"
}

# step NAME LIMIT_S COMMAND...: runs it with its output in $logs/NAME.log,
# under timeout (at most what is left of the budget). Sets rc (124: timed
# out; skip: no time left) and secs.
step() {
  local name=$1 limit=$2 left t
  shift 2
  log=$logs/$name.log
  left=$((deadline - $(date +%s)))
  secs=0
  if [ "$left" -lt 30 ]; then rc=skip; return; fi
  [ "$limit" -le "$left" ] || limit=$left
  t=$(date +%s)
  rc=0
  timeout -k 10 "$limit" "$@" >"$log" 2>&1 || rc=$?
  secs=$(($(date +%s) - t))
  if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then echo "timed out after $limit s" >>"$log"; fi
}
# fail_or_skip NAME [WHAT]: the row of a step that did not succeed (WHAT: said first).
fail_or_skip() {
  local what=${2:+$2; }
  if [ "$rc" = skip ]; then row "$1" SKIP "${what}no time left in GPU_CHECK_BUDGET_S" 0
  elif [ "$rc" = 124 ] || [ "$rc" = 137 ]; then row "$1" FAIL "${what}timed out ($(basename "$log"))" "$secs"
  else row "$1" FAIL "${what}exit $rc: $(why "$log")" "$secs"
  fi
}

torch_version=$("$PY" -c 'import torch; print(torch.__version__)' 2>/dev/null)
# libtorch and its CUDA libraries: the image's, in front of what is there
# (the driver's libcuda may come from LD_LIBRARY_PATH in a container).
ld_path=$torch_dir/lib
for d in "$(dirname "$torch_dir")"/nvidia/*/lib; do
  if [ -d "$d" ]; then ld_path+=:$d; fi
done
ld_path+=${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
# Every skein command goes through this wrapper, which sets LD_LIBRARY_PATH
# for skein alone (and its workers), not for the image's Python.
sk=$work/bin/skein
wrap() {
  mkdir -p "$work/bin"
  printf '#!/usr/bin/env bash\nLD_LIBRARY_PATH=%q exec %q "$@"\n' "$1" "$bundle/bin/skein" >"$sk"
  chmod +x "$sk"
}
devset=()
cpuset=()
if [ "$dev" != none ]; then devset=(--set "device=$dev"); cpuset=(--set device=cpu); fi

# The runtime: skein --version with the image's libstdc++, else the bundle's.
wrap "$ld_path"
cxx="the image's libstdc++"
step runtime 60 "$sk" --version
if [ "$rc" != 0 ] && grep -qE 'GLIBCXX_|CXXABI_' "$log"; then
  ld_path=$bundle/lib/compat:$ld_path
  wrap "$ld_path"
  cxx="the bundle's libstdc++ (the image's is older than it needs)"
  step runtime 60 "$sk" --version
fi
if [ "$rc" = 0 ]; then
  row runtime PASS "$(sed -n 's/^ *running with: *//p' "$log"); $cxx" "$secs"
else
  fail_or_skip runtime
  echo; table
  exit 1  # nothing else can run
fi
command -v ldd >/dev/null || die "no ldd on this machine"
missing=$(find "$bundle/bin" "$bundle/lib" -path "$bundle/lib/compat" -prune -o -type f -print | sort |
  while read -r f; do
    if deps=$(LD_LIBRARY_PATH=$ld_path ldd "$f" 2>&1); then
      sed -n "s|^\t*\([^ ]*\) => not found|${f#"$bundle"/}: \1|p" <<<"$deps"
    else
      echo "${f#"$bundle"/}: ldd failed: $deps"
    fi
  done)
if [ -z "$missing" ]; then
  row "ldd: every file of the bundle" PASS "nothing not found" 0
else
  row "ldd: every file of the bundle" FAIL "$(echo "$missing" | head -3 | tr '\n' ' ')" 0
fi
cat >"$work/tiny.json" <<'EOF'
{"model": {"plugin": "mlp", "hidden": [32]},
 "data": {"plugin": "synthetic", "samples": 512, "test_samples": 128},
 "max_epochs": 2, "callbacks": []}
EOF
step tiny 120 "$sk" train --config "$work/tiny.json" --run-dir "$work/tiny" "${devset[@]}"
if [ "$rc" = 0 ]; then
  row "tiny run (synthetic data)" PASS "test acc $(get "$work/tiny" acc)$(d=$(get "$work/tiny" device); echo "${d:+, on $d}")" "$secs"
else
  fail_or_skip "tiny run (synthetic data)"
fi
if [ "$mode" = smoke ]; then
  echo
  table
  exit $failed
fi

# ran NAME RUN WANT DETAIL: the row of a run that exited 0: PASS, with the
# device results.json names, or FAIL if that is not WANT (cuda, cpu or none).
ran() {
  local d
  d=$(get "$2" device)
  if [ -z "$d" ]; then row "$1" PASS "$4 (results.json names no device)" "$secs"; return 0; fi
  case $3:$d in
    none:* | cpu:cpu* | cuda:cuda*) row "$1" PASS "$4, on $d" "$secs" ;;
    *) row "$1" FAIL "$4, but ran on $d, not $3" "$secs"; return 1 ;;
  esac
}
example=(--config examples/fashion_mnist.json --set "data.dir=$data" --set "max_epochs=$epochs" --set "data.limit=$limit")
want=$dev
case $dev in cuda:*) want=cuda ;; esac

# a: the example on the GPU and on the CPU.
acc_gpu=
acc_cpu=
for side in gpu cpu; do
  if [ "$side" = gpu ]; then name="a: example on the GPU ($dev)" w=$want set=("${devset[@]}")
  else name="a: example on the CPU" w=cpu set=("${cpuset[@]}")  # none: no device key, the same run twice
  fi
  step "a_$side" 180 "$sk" train "${example[@]}" "${set[@]}" --run-dir "$work/a_$side"
  if [ "$rc" != 0 ]; then fail_or_skip "$name"; continue; fi
  acc=$(get "$work/a_$side" acc)
  if ran "$name" "$work/a_$side" "$w" "test acc $acc, $(get "$work/a_$side" s_per_epoch) s/epoch"; then
    if [ "$side" = cpu ]; then acc_cpu=$acc; else acc_gpu=$acc; fi
  fi
done
if [ -n "$acc_gpu" ] && [ -n "$acc_cpu" ]; then
  diff=$(points "$acc_gpu" "$acc_cpu")
  if within "$diff" 1; then row "a: GPU vs CPU test accuracy" PASS "$diff points apart (at most 1)" 0
  else row "a: GPU vs CPU test accuracy" FAIL "$diff points apart (at most 1)" 0
  fi
else
  row "a: GPU vs CPU test accuracy" FAIL "a run is missing" 0
fi

# b: 2 processes on the one GPU: NCCL, else Gloo with CUDA tensors.
ddp=(--config examples/fashion_mnist_ddp.json --nproc-per-node 2 --set "data.dir=$data"
  --set "max_epochs=$epochs" --set "data.limit=$limit" "${devset[@]}")
step b_nccl 90 "$sk" train "${ddp[@]}" --set parallel.backend=nccl --run-dir "$work/b_nccl"
if [ "$rc" = 0 ]; then
  ran "b: 2 processes on one $dev, ddp" "$work/b_nccl" "$want" "backend nccl: test acc $(get "$work/b_nccl" acc)" || true
elif [ "$rc" = skip ]; then
  fail_or_skip "b: 2 processes on one $dev, ddp"
else
  nccl="nccl refused ($(why "$log"))"
  nccl_s=$secs
  step b_gloo 150 "$sk" train "${ddp[@]}" --set parallel.backend=gloo --run-dir "$work/b_gloo"
  if [ "$rc" = 0 ]; then
    secs=$((nccl_s + secs))
    ran "b: 2 processes on one $dev, ddp" "$work/b_gloo" "$want" "$nccl; backend gloo with $dev tensors: test acc $(get "$work/b_gloo" acc)" || true
  else
    fail_or_skip "b: 2 processes on one $dev, ddp" "$nccl; gloo"
  fi
fi

# c: mixed precision on the GPU, against the 32-bit run of a (within 2 points).
for p in 16-mixed bf16-mixed; do
  if [ "$p" = 16-mixed ] && [ "$want" != cuda ]; then
    row "c: precision $p" SKIP "needs CUDA (GPU_CHECK_DEVICE=$dev)" 0
    continue
  fi
  step "c_$p" 150 "$sk" train "${example[@]}" "${devset[@]}" --set "precision=$p" --run-dir "$work/c_$p"
  if [ "$rc" != 0 ]; then fail_or_skip "c: precision $p"; continue; fi
  acc=$(get "$work/c_$p" acc)
  skipped=$(get "$work/c_$p" skipped)
  detail="test acc $acc, $(get "$work/c_$p" s_per_epoch) s/epoch${skipped:+, $skipped skipped steps}"
  if [ "$p" = 16-mixed ] && [ -z "$skipped" ]; then detail+=", history has no skipped_steps"; fi
  if [ -n "$acc_gpu" ] && [ -n "$acc" ]; then
    diff=$(points "$acc" "$acc_gpu")
    detail+=", $diff points from 32-bit"
    if within "$diff" 2; then row "c: precision $p" PASS "$detail" "$secs"; else row "c: precision $p" FAIL "$detail (at most 2)" "$secs"; fi
  else
    row "c: precision $p" FAIL "$detail; no accuracy to compare with" "$secs"
  fi
done

# d: a checkpoint of a GPU run resumed on the CPU.
step d_gpu 120 "$sk" train "${example[@]}" "${devset[@]}" --set max_epochs=2 --plugin checkpoint --run-dir "$work/d"
if [ "$rc" = 0 ]; then
  d_s=$secs
  step d_cpu 120 "$sk" train --resume "$work/d" --set max_epochs=3 "${cpuset[@]}"
  if [ "$rc" = 0 ]; then
    secs=$((d_s + secs))
    if [ "$(get "$work/d" epochs)" = 3 ]; then
      ran "d: checkpoint of $dev resumed on cpu" "$work/d" cpu "epochs 1-2 on $dev, 3 on cpu: test acc $(get "$work/d" acc)" || true
    else
      row "d: checkpoint of $dev resumed on cpu" FAIL "history has $(get "$work/d" epochs) epochs, not 3" "$secs"
    fi
  else
    fail_or_skip "d: checkpoint of $dev resumed on cpu" "the resume on cpu"
  fi
else
  fail_or_skip "d: checkpoint of $dev resumed on cpu" "the $dev run"
fi

# e: throughput, Skein against the image's PyTorch, the same models and data.
bench_dev=()
if [ "$dev" != none ]; then bench_dev=(--device "$dev"); fi
step e_bench 240 "$PY" bench/vs_pytorch.py --build "$work" --only speed "${bench_dev[@]}" --data "$data" \
  --rows "example MLP,wide MLP,bundled cnn" --rounds 1 --epochs 3 --limit "$limit" --no-netns --out "$work/bench.md"
if [ "$rc" = 0 ]; then
  cp "$work/bench.md" "$logs/bench.md"
  # Its rows: | family | [device |] Skein s/epoch | PyTorch s/epoch | ratio | ...
  while IFS='|' read -r _ family c2 c3 c4 c5 _; do
    if [ "$dev" = none ]; then detail="Skein $c2 s/epoch, PyTorch $c4 s/epoch (cpu)"
    else detail="Skein $c3 s/epoch, PyTorch $c4 s/epoch: Skein at $c5 PyTorch's speed (on $(trim "$c2"))"
    fi
    row "e: throughput, $(trim "$family")" PASS "$(trim "$detail")" "$secs"
  done < <(grep -E '^\| (example|wide|bundled)' "$work/bench.md")
else
  fail_or_skip "e: throughput vs PyTorch $torch_version"
fi

echo
echo "gpu-check: done in $(($(date +%s) - start)) s"
table
exit $failed
