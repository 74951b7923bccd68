#!/bin/sh
# PyTorch as the reference on a GPU host: imports KernelBench problems with `kforge import` and
# evaluates hand-written CUDA kernels for some of them against PyTorch (the worker's bridge runs the
# module in float64 on the GPU). Writes a Markdown report. Run on the host, after unpacking the
# staged headless build (tests/gpu/stage-headless.sh):
#   tests/gpu/torch-check.sh .gpu/headless KERNELBENCH_DIR OUT.md
# KERNELBENCH_DIR holds level1/ and level2/ of KernelBench's problems.
set -eu
staged=$1
kb=$2
out=$3
here=$(cd "$(dirname "$0")" && pwd)
bin="$staged/bin/kforge-headless"
export LD_LIBRARY_PATH="$staged/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

{
    echo "# PyTorch references on the GPU host"
    echo
    echo "$(date -u '+%Y-%m-%d %H:%M UTC'); $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1);" \
         "$(python3 -c 'import torch; print("PyTorch", torch.__version__)')"
    echo
    echo "## kforge import"
    echo
    echo "| problem | result | s | family | sizes | small variant | FLOPs |"
    echo "|---|---|---|---|---|---|---|"
} > "$out"

for p in level1/1_Square_matrix_multiplication_ level1/4_Matrix_vector_multiplication_ level1/19_ReLU \
         level1/23_Softmax level1/26_GELU_ level1/33_BatchNorm level1/36_RMSNorm_ level1/40_LayerNorm \
         level1/41_Max_Pooling_1D level1/47_Sum_reduction_over_a_dimension level1/63_conv_standard_2D__square_input__square_kernel \
         level1/88_MinGPTNewGelu level1/97_ScaledDotProductAttention \
         level2/12_Gemm_Multiply_LeakyReLU level2/14_Gemm_Divide_Sum_Scaling level2/17_Conv2d_InstanceNorm_Divide; do
    name=$(basename "$p")
    start=$(date +%s.%N)
    if "$bin" import "$kb/$p.py" --out "$work/$name" --name "kb_$name" >"$work/$name.log" 2>&1; then
        secs=$(python3 -c "print(f'{$(date +%s.%N) - $start:.1f}')")
        python3 - "$work/$name/task.json" "$p" "$secs" >>"$out" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
sizes = " ".join("%s=%s" % kv for kv in t["sizes"].items())
small = t.get("variants", {}).get("small")
small = " ".join("%s=%s" % kv for kv in small.items()) if small else "none: " + "; ".join(t["imported"]["notes"])
print("| %s | imported | %s | %s | %s | %s | `%s` |" % (sys.argv[2], sys.argv[3], t["family"], sizes, small, t["flops"]))
PY
    else
        echo "| $p | failed: $(tail -1 "$work/$name.log" | tr '|' '/') | | | | | |" >>"$out"
    fi
done

{
    echo
    echo "## CUDA kernels verified against PyTorch"
    echo
    echo "| problem | kernel | variant | status | max abs error | candidate median us | reference s (3 seeds + timed sets) | note |"
    echo "|---|---|---|---|---|---|---|---|"
} >>"$out"
for run in "level1/19_ReLU relu.cu small" "level1/23_Softmax softmax.cu small" \
           "level1/1_Square_matrix_multiplication_ matmul.cu default" \
           "level2/12_Gemm_Multiply_LeakyReLU gemm_leakyrelu.cu default"; do
    set -- $run
    name=$(basename "$1")
    [ -f "$work/$name/task.json" ] || { echo "| $1 | $2 | $3 | not imported | | | | |" >>"$out"; continue; }
    "$bin" eval --task "$work/$name" --kernel "$here/torch/$2" --backend cuda --variant "$3" --json \
        >"$work/$name.json" 2>"$work/$name.err" || true
    python3 - "$work/$name.json" "$1" "$2" "$3" "$work/$name.err" >>"$out" <<'PY'
import json, sys
try:
    r = json.load(open(sys.argv[1]))
except Exception:
    print("| %s | %s | %s | no result: %s | | | | |" % (sys.argv[2], sys.argv[3], sys.argv[4], open(sys.argv[5]).read()[-200:].replace("\n", " ")))
    sys.exit(0)
err = max((o.get("max_abs_error", 0) for o in r.get("outputs", [])), default=0)
med = r.get("timing", {}).get("candidate", {}).get("median_us", "")
ref = r.get("phase_s", {}).get("reference", "")
notes = [d["message"] for d in r.get("diagnostics", []) if d.get("role") == "reference"]
status = r["status"] + ("" if r["status"] == "ok" else ": " + r.get("message", "")[:160])
print("| %s | %s | %s | %s | %.3g | %s | %s | %s |" % (sys.argv[2], sys.argv[3], sys.argv[4], status, err,
      "%.1f" % med if med != "" else "", "%.2f" % ref if ref != "" else "", "; ".join(notes)[:160]))
PY
done
cat "$out"
