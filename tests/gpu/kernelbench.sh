#!/bin/sh
# KernelBench on a GPU host with the staged build: `kforge bench kernelbench` over the problems in
# KB_DIR (level1/, level2/), each searched from its seed kernel in tests/gpu/kernelbench/seeds, then
# `kforge export --best --torch` of each correct problem's best and its check.py (ModelNew against
# the PyTorch module on fresh inputs, timed beside eager and torch.compile).
#   tests/gpu/kernelbench.sh .gpu/headless KB_DIR OUT_DIR [kforge bench options, e.g. --level 1]
# KernelBench's newer level-1 shapes hold up to 6.4 GB per tensor: an evaluation at those sizes
# takes minutes (the sets are made one at a time), so keep --budget-evals small there, or search at
# the small variant (--run-option=--variant=small, with KB_NO_CHECK=1).
set -eu
staged=$1
kb=$2
out=$3
shift 3
here=$(cd "$(dirname "$0")/../.." && pwd)
bin="$staged/bin/kforge-headless"
export LD_LIBRARY_PATH="$staged/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# The host's Python has PyTorch (the build's own virtual environment is not here).
export KFORGE_PYTHON="${KFORGE_PYTHON:-$(command -v python3)}"
mkdir -p "$out"
{
    echo "$(date -u '+%Y-%m-%d %H:%M UTC'); $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1);" \
         "$("$KFORGE_PYTHON" -c 'import torch; print("PyTorch", torch.__version__)')"
} >"$out/host.txt"
"$bin" bench kernelbench "$kb" --seeds "$here/tests/gpu/kernelbench/seeds" --out "$out" "$@" || true
# Every correct problem's best as ModelNew, checked in PyTorch (at the module's own sizes: leave it
# out with KB_NO_CHECK=1 when the runs searched another size variant).
[ -z "${KB_NO_CHECK:-}" ] || exit 0
"$KFORGE_PYTHON" - "$out/kernelbench.json" <<'PY' >"$out/correct.txt"
import json, re, sys
for p in json.load(open(sys.argv[1]))["problems"]:
    m = re.match(r"run (\d+),", p["note"])
    if p["correct"] and m:
        print(p["problem"], m.group(1))
PY
mkdir -p "$out/modelnew"
while read -r problem run; do
    dir="$out/modelnew/$problem"
    "$bin" export --best --torch --run "$run" --db "$out/runs.kforge" --out "$dir" >/dev/null 2>"$dir.err" || {
        echo "$problem: export failed: $(tail -1 "$dir.err")" >>"$out/modelnew.txt"
        continue
    }
    (cd "$dir" && "$KFORGE_PYTHON" check.py --reps 50 --seed 7) >"$dir.check" 2>&1 || true
    { echo "## $problem"; echo; echo '```'; cat "$dir.check"; echo '```'; echo; } >>"$out/modelnew.txt"
done <"$out/correct.txt"
