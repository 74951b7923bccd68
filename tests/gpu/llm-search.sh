#!/bin/bash
# A search with a language model on a GPU host that reaches no LLM endpoint: the model is the fake
# LLM server on 127.0.0.1, scripted with CUDA vector_add kernels (tests/gpu/llm-vector-add-cuda.json:
# a broken first kernel, float4 and items-per-thread kernels, strategy rewrites). The run evaluates
# what the "model" wrote on the real GPU: LLM calls, a compile error, repairs and crossovers, the
# tuner and experts beside them. Uses the folder staged by tests/gpu/stage-headless.sh.
#   OUT=results BUDGET=60 tests/gpu/llm-search.sh
# The run store it leaves ($OUT/runs.kforge) opens in the workbench or in `kforge render-views`.
set -u
headless=${KFORGE_HEADLESS:-.gpu/headless}
out=${OUT:-/tmp/kforge-llm}
mkdir -p "$out"
export LD_LIBRARY_PATH="$headless/lib:${LD_LIBRARY_PATH:-}"
export KFORGE_TASKS_DIR="$PWD/tasks" KFORGE_RESOURCES_DIR="$PWD/resources" KFORGE_WORKER_DIR="$headless/bin"
export KFORGE_CACHE_DIR="${KFORGE_CACHE_DIR:-$out/cache}"

"$headless/bin/kforge-fake-llm-server" --script tests/gpu/llm-vector-add-cuda.json --log "$out/llm-requests.jsonl" \
    > "$out/server.out" 2> "$out/server.log" &
server=$!
port=
for _ in $(seq 100); do
    port=$(sed -n 's/^listening \([0-9]*\).*/\1/p' "$out/server.out")
    [ -n "$port" ] && break
    sleep 0.1
done
if [ -z "$port" ]; then
    echo "the fake LLM server did not start: $(cat "$out/server.log")"
    kill "$server" 2> /dev/null
    exit 1
fi
{ date -u +%Y-%m-%dT%H:%M:%SZ; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } > "$out/gpu.txt"
timeout "${TASK_TIMEOUT:-400}" "$headless/bin/kforge-headless" run --task "${TASK:-vector_add}" --backend cuda \
    --islands 2 --children 3 --budget-evals "${BUDGET:-60}" \
    --llm-endpoint "local=http://127.0.0.1:$port/v1,retries=1" --llm local:gpt-4.1-mini \
    --llm-rate 0.6 --llm-repair 0.5 --llm-max-tokens 1024 \
    --db "$out/runs.kforge" --experience "$out/experience.kforge-library" --json > "$out/run.json" 2> "$out/run.log"
echo "run: exit $?: $(tr -d '\n ' < "$out/run.json" | head -c 500)"
kill "$server" 2> /dev/null
wait "$server" 2> /dev/null
