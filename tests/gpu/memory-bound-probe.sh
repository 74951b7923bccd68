#!/bin/bash
# On the GPU host: where reduce_sum's and vector_add's last 1% against torch.compile might be.
# Uses the folder staged by tests/gpu/stage-headless.sh (KFORGE_HEADLESS, default .gpu/headless)
# and a Python with PyTorch and CuPy (PYTHON, default python3). Writes to OUT (default
# /tmp/kforge-memory-probe):
#  - vector_add.choice.txt: what torch.compile generates for vector_add (its Triton source, its
#    autotuner's choice, and every configuration's PTX loads and stores);
#  - reduce_sum.sbs.txt, vector_add.sbs.txt: tests/gpu/sidebyside.py over the library kernels'
#    variants: reduce_sum at its defaults (a one-warp second launch sums the partials, FINISH 1),
#    with the last-block ticket instead (FINISH 0), with Triton's L2 evict-first loads (LOAD 2)
#    and with eight float4s in flight (UNROLL 8); vector_add at its defaults, VPT 1 (the offline
#    search's best on an H100) and BLOCK 128;
#  - eval.*.txt: `kforge eval --pytorch` of reduce_sum's defaults and ticket, and of vector_add's
#    defaults and VPT 1, with ROUNDS paired rounds each (default 80).
# Settled on an H100 on 2026-12-06 (OFFLINE-SEARCH.md): the expert's main loop is as fast as
# Triton's under ncu; the ticket was reduce_sum's gap (0.990x against a tie, 0.999x, with the
# one-warp finish); UNROLL 1 (4.5% slower), the L2 evict-first load alone, BLOCK 256 with two
# loads, evict-first loads for vector_add (1.5-2% slower) and bulk copies (1-4% slower) are not
# what is missing.
# usage: OUT=results ROUNDS=80 tests/gpu/memory-bound-probe.sh
set -u
headless=${KFORGE_HEADLESS:-.gpu/headless}
out=${OUT:-/tmp/kforge-memory-probe}
rounds=${ROUNDS:-80}
py=${PYTHON:-python3}
mkdir -p "$out"
export LD_LIBRARY_PATH="$headless/lib:${LD_LIBRARY_PATH:-}"
export KFORGE_TASKS_DIR="$PWD/tasks" KFORGE_RESOURCES_DIR="$PWD/resources" KFORGE_WORKER_DIR="$headless/bin"
{ date -u +%Y-%m-%dT%H:%M:%SZ; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; } \
    | tee "$out/gpu.txt"

timeout 120 "$py" tests/gpu/compile-choice.py vector_add --compiles 1 --reps 20 --show-source \
    > "$out/vector_add.choice.txt" 2>&1
echo "compile-choice vector_add: exit $?"
grep -E "XBLOCK|num_warps|--- ptx|global|reqntid" "$out/vector_add.choice.txt" | head -40

lib=resources/experts/reduction/reduce_sum_last_block.cu
timeout 200 "$py" tests/gpu/sidebyside.py --task reduce_sum --rounds 40 --kernel $lib --kernel $lib:FINISH=0 \
    --kernel $lib:LOAD=2 --kernel $lib:UNROLL=8 > "$out/reduce_sum.sbs.txt" 2>&1
echo "sidebyside reduce_sum: exit $?"
tail -6 "$out/reduce_sum.sbs.txt"

add=resources/experts/elementwise/vector_add_float4.cu
timeout 150 "$py" tests/gpu/sidebyside.py --task vector_add --rounds 40 --kernel $add --kernel $add:VPT=1 \
    --kernel $add:BLOCK=128 > "$out/vector_add.sbs.txt" 2>&1
echo "sidebyside vector_add: exit $?"
tail -5 "$out/vector_add.sbs.txt"

evaluate() { # file task kernel [--param P=V]...: appended to eval.<file>.txt, which stays one of 8 files
    local name=$1 task=$2 kernel=$3
    shift 3
    local start
    start=$(date +%s)
    echo "=== $task $kernel $*" >> "$out/eval.$name.txt"
    timeout 300 "$headless/bin/kforge-headless" eval --backend cuda --pytorch --pytorch-rounds "$rounds" \
        --task "$task" --kernel "$kernel" "$@" > "$out/eval.tmp" 2>&1
    echo "eval $name $*: exit $? after $(( $(date +%s) - start )) s"
    cat "$out/eval.tmp" >> "$out/eval.$name.txt" && rm -f "$out/eval.tmp"
    grep -E "speedup .*(eager|torch.compile)" "$out/eval.$name.txt" | tail -2
}
evaluate reduce_sum reduce_sum $lib
evaluate reduce_sum reduce_sum $lib --param FINISH=0
evaluate vector_add vector_add $add
evaluate vector_add vector_add $add --param VPT=1
date -u +%Y-%m-%dT%H:%M:%SZ
