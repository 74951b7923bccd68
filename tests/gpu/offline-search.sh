#!/bin/bash
# The offline search (expert library + template tuner, no LLM) on a GPU host, one run per CUDA task,
# each with its own evaluation budget; then each run's report and best kernel exported, and a line a
# task with the best against PyTorch and whether the paired rounds tell it apart. Uses the
# folder staged by tests/gpu/stage-headless.sh, so the host needs no Qt.
#   OUT=results TASKS="sgemm softmax" BUDGET=40 tests/gpu/offline-search.sh
# TASK_TIMEOUT (default 300) stops one task's run; DEADLINE (seconds since the epoch) stops the
# whole loop in time: a task starts only with TASK_MIN (default 60) seconds left, and its run is
# stopped at the deadline.
set -u
headless=${KFORGE_HEADLESS:-.gpu/headless}
out=${OUT:-/tmp/kforge-offline}
budget=${BUDGET:-40}
tasks=${TASKS:-"sgemm gemm_bias_relu softmax rmsnorm layernorm layernorm_residual row_sum gemv"}
mkdir -p "$out"
export LD_LIBRARY_PATH="$headless/lib:${LD_LIBRARY_PATH:-}"
export KFORGE_TASKS_DIR="$PWD/tasks" KFORGE_RESOURCES_DIR="$PWD/resources" KFORGE_WORKER_DIR="$headless/bin"
export KFORGE_CACHE_DIR="${KFORGE_CACHE_DIR:-$out/cache}"
kforge="$headless/bin/kforge-headless"

{ date -u +%Y-%m-%dT%H:%M:%SZ; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; } > "$out/gpu.txt"
printf '{"id":1,"type":"ceilings","device":0,"refresh":false}\n{"id":2,"type":"shutdown"}\n' \
    | "$headless/bin/kforge-worker-cuda" > "$out/ceilings.jsonl" 2> "$out/ceilings.log"
for t in $tasks; do
    start=$(date +%s)
    limit=${TASK_TIMEOUT:-300}
    if [ -n "${DEADLINE:-}" ]; then
        left=$(( DEADLINE - start ))
        if [ "$left" -lt "${TASK_MIN:-60}" ]; then
            echo "$t: not run, ${left} s left before the deadline"
            continue
        fi
        [ "$left" -lt "$limit" ] && limit=$left
    fi
    timeout "$limit" "$kforge" run --task "$t" --backend cuda --budget-evals "$budget" \
        --db "$out/runs.kforge" --json ${RUN_ARGS:-} > "$out/$t.json" 2> "$out/$t.log"
    echo "$t: exit $? after $(( $(date +%s) - start )) s: $(tr -d '\n ' < "$out/$t.json" | head -c 400)"
    id=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['run'])" "$out/$t.json" 2>/dev/null) || continue
    "$kforge" runs show "$id" --db "$out/runs.kforge" --top 8 > "$out/$t.show.txt" 2>&1
    "$kforge" export --best --run "$id" --db "$out/runs.kforge" --out "$out/$t-best" > /dev/null 2>&1
done

# One line a task: the confirmed best against the better of eager and torch.compile, with the
# verdict of the paired rounds ("a tie" when they cannot tell the two apart).
python3 - "$out" $tasks <<'PY'
import json, sys
out, tasks = sys.argv[1], sys.argv[2:]
print("task: best vs eager, vs torch.compile (verdict over the paired rounds)")
for t in tasks:
    try:
        p = json.load(open(f"{out}/{t}.json"))["pytorch"]
    except (OSError, ValueError, KeyError, TypeError):
        print(f"{t}: no PyTorch comparison (see {out}/{t}.log)")
        continue
    def verdict(i):
        if not isinstance(i, dict):
            return "no interval"
        return f"{i['verdict']}, 95% interval {i['low']:.3f}x-{i['high']:.3f}x over {i['rounds']} rounds"
    def x(v):
        return "-" if v is None else f"{v:.3f}x"
    print(f"{t}: {x(p.get('best_speedup_vs_eager'))} ({verdict(p.get('best_speedup_vs_eager_interval'))}), "
          f"{x(p.get('best_speedup_vs_compile'))} ({verdict(p.get('best_speedup_vs_compile_interval'))})")
PY
