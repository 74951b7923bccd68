#!/bin/bash
# On the GPU host: where reduce_sum's and vector_add's last 1-2% against torch.compile might be.
# Uses the folder staged by tests/gpu/stage-headless.sh (KFORGE_HEADLESS, default .gpu/headless)
# and a Python with PyTorch and CuPy (PYTHON, default python3). Writes to OUT (default
# /tmp/kforge-memory-probe):
#  - vector_add.choice.txt: what torch.compile generates for vector_add (its Triton source, and
#    from its PTX the loads and stores with their cache policies; reduce_sum's was read on
#    2026-12-06: two L1- and L2-evict-first float4 loads a thread, see OFFLINE-SEARCH.md);
#  - reduce_sum.sbs.txt, vector_add.sbs.txt: tests/gpu/sidebyside.py over the library kernels'
#    variants (LOAD 2, torch.compile's L1 and L2 evict-first load; Triton's shape of 256 threads
#    with two float4s in flight; FINISH 1, torch.compile's two launches);
#  - eval.*.txt: `kforge eval --pytorch` of the library kernels at their defaults, of reduce_sum's
#    at LOAD 2 and at Triton's shape with LOAD 2, and of vector_add's at BLOCK 128 (after its
#    defaults, in the same file), with ROUNDS paired rounds each (default 80), for their verdicts.
# Timed on 2026-12-06 and settled: UNROLL 1 (4.5% slower) and FINISH 1 (no better than the ticket).
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
grep -E "XBLOCK|num_warps|def triton|numel|--- ptx|global|maxntid|reqntid" "$out/vector_add.choice.txt" | head -40

lib=resources/experts/reduction/reduce_sum_last_block.cu
triton=BLOCK=256,UNROLL=2,LOAD=2   # torch.compile's loop: 256 threads, two float4s in flight, L2 evict-first
timeout 200 "$py" tests/gpu/sidebyside.py --task reduce_sum --rounds 40 --kernel $lib --kernel $lib:LOAD=2 \
    --kernel $lib:$triton --kernel $lib:BLOCK=256,UNROLL=2 --kernel $lib:UNROLL=2,LOAD=2 \
    --kernel $lib:FINISH=1,$triton --kernel $lib:OCC=1024,$triton > "$out/reduce_sum.sbs.txt" 2>&1
echo "sidebyside reduce_sum: exit $?"
tail -10 "$out/reduce_sum.sbs.txt"

add=resources/experts/elementwise/vector_add_float4.cu
timeout 150 "$py" tests/gpu/sidebyside.py --task vector_add --rounds 40 --kernel $add --kernel $add:BLOCK=128 \
    --kernel $add:BLOCK=128,VPT=1 --kernel $add:BLOCK=512,VPT=1 --kernel $add:VPT=4 > "$out/vector_add.sbs.txt" 2>&1
echo "sidebyside vector_add: exit $?"
tail -9 "$out/vector_add.sbs.txt"

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
evaluate reduce_sum.load2 reduce_sum $lib --param LOAD=2
evaluate reduce_sum.triton reduce_sum $lib --param BLOCK=256 --param UNROLL=2 --param LOAD=2
evaluate vector_add vector_add $add
evaluate vector_add vector_add $add --param BLOCK=128   # Triton's shape: 128 threads, two float4s each
date -u +%Y-%m-%dT%H:%M:%SZ
