#!/bin/sh
# PyTorch as the yardstick on a GPU host: every built-in CUDA task's baseline (or a kernel given
# per task) evaluated with `kforge eval --pytorch` at the default sizes, so that each speedup over
# the task's baseline stands beside the speedups over PyTorch eager and torch.compile, all timed in
# the same call on the same inputs; "in PyTorch's process" is the kernel's time where it was also
# timed beside PyTorch in one process (the speedups over PyTorch are then from there). Writes a
# Markdown table. Run on the host with the staged build:
#   tests/gpu/torch-yardstick.sh .gpu/headless OUT.md [TASK=KERNEL ...]
set -eu
staged=$1
out=$2
shift 2
here=$(cd "$(dirname "$0")/../.." && pwd)
bin="$staged/bin/kforge-headless"
export LD_LIBRARY_PATH="$staged/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
{
    echo "# PyTorch as the yardstick"
    echo
    echo "$(date -u '+%Y-%m-%d %H:%M UTC'); $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1);" \
         "$(python3 -c 'import torch; print("PyTorch", torch.__version__)')"
    echo
    echo "| task | kernel | status | kernel us | in PyTorch's process us | eager us | compile us | vs eager | vs compile | vs baseline | PyTorch timed by |"
    echo "|---|---|---|---|---|---|---|---|---|---|---|"
} >"$out"
for dir in "$here"/tasks/*/; do
    task=$(basename "$dir")
    [ -f "$dir/baseline.cu" ] || continue
    kernel=""
    for pair in "$@"; do
        [ "${pair%%=*}" = "$task" ] && kernel=${pair#*=}
    done
    if [ -n "$kernel" ]; then
        "$bin" eval --task "$task" --backend cuda --pytorch --json --kernel "$kernel" >"$work/$task.json" 2>"$work/$task.err" || true
    else
        "$bin" eval --task "$task" --backend cuda --pytorch --json >"$work/$task.json" 2>"$work/$task.err" || true
    fi
    python3 - "$work/$task.json" "$task" "${kernel:-baseline}" "$work/$task.err" >>"$out" <<'PY'
import json, os, sys
try:
    r = json.load(open(sys.argv[1]))
except Exception:
    print("| %s | %s | no result: %s | | | | | | | | |" % (sys.argv[2], os.path.basename(sys.argv[3]), open(sys.argv[4]).read()[-160:].replace("\n", " ")))
    sys.exit(0)
t = r.get("timing", {})
p = t.get("pytorch", {})
def us(x):
    return "%.1f" % x["median_us"] if x else ""
def x(v):
    return "%.2fx" % v if v is not None else ""
print("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
    sys.argv[2], os.path.basename(sys.argv[3]), r["status"], us(t.get("candidate")), us(p.get("candidate_beside")),
    us(p.get("eager")),
    us(p.get("compile")), x(p.get("speedup_vs_eager")), x(p.get("speedup_vs_compile")), x(t.get("speedup")),
    ((p.get("eager") or {}).get("method", "") + ("; " + p["note"] if "failed" in p.get("note", "") else ""))[:120]))
PY
done
cat "$out"
