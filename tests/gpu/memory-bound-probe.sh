#!/bin/bash
# On the GPU host: where reduce_sum's and vector_add's last 1-2% against torch.compile might be.
# Uses the folder staged by tests/gpu/stage-headless.sh (KFORGE_HEADLESS, default .gpu/headless)
# and a Python with PyTorch and CuPy (PYTHON, default python3). Writes to OUT (default
# /tmp/kforge-memory-probe):
#  - reduce_sum.choice.txt: what torch.compile generates for reduce_sum (its Triton source: the
#    split, the block and the loop; and from its PTX, the loads with their cache policies);
#  - reduce_sum.sbs.txt, vector_add.sbs.txt: tests/gpu/sidebyside.py over the library kernels'
#    variants (UNROLL 1, as Triton's loop; a grid of whole waves; FINISH 1, the last-block ticket
#    replaced by a second launch, torch.compile's two-kernel shape);
#  - eval.*.txt: `kforge eval --pytorch` of the library kernels at their defaults, of reduce_sum's
#    at UNROLL 1 and FINISH 1 and of vector_add's at BLOCK 128 (after its defaults, in the same
#    file), with ROUNDS paired rounds each (default 80), for their verdicts.
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

timeout 120 "$py" tests/gpu/compile-choice.py reduce_sum --compiles 1 --reps 20 --show-source \
    > "$out/reduce_sum.choice.txt" 2>&1
echo "compile-choice reduce_sum: exit $?"
grep -E "XBLOCK|R0_BLOCK|RBLOCK|num_warps|def triton|numel|--- ptx|global|maxntid|reqntid" \
    "$out/reduce_sum.choice.txt" | head -40

lib=resources/experts/reduction/reduce_sum_last_block.cu
timeout 200 "$py" tests/gpu/sidebyside.py --task reduce_sum --rounds 40 --kernel $lib --kernel $lib:UNROLL=1 \
    --kernel $lib:UNROLL=2 --kernel $lib:GRID=528 --kernel $lib:UNROLL=1,GRID=528 --kernel $lib:FINISH=1 \
    --kernel $lib:FINISH=1,UNROLL=1 --kernel $lib:FINISH=1,UNROLL=2,GRID=528 > "$out/reduce_sum.sbs.txt" 2>&1
echo "sidebyside reduce_sum: exit $?"
tail -12 "$out/reduce_sum.sbs.txt"

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
evaluate reduce_sum.unroll1 reduce_sum $lib --param UNROLL=1
evaluate reduce_sum.finish1 reduce_sum $lib --param FINISH=1
evaluate vector_add vector_add $add
evaluate vector_add vector_add $add --param BLOCK=128   # Triton's shape: 128 threads, two float4s each
date -u +%Y-%m-%dT%H:%M:%SZ
