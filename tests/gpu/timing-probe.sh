#!/bin/bash
# On the GPU host: builds tests/gpu/timing-probe.cpp (a minimal reproduction of the CUDA worker's
# timed runs of the rmsnorm task's kernel) and runs it twice, with CUDA initialised through the
# driver API as the worker does and through the runtime API as PyTorch does. Prints one line per
# variant: the kernel's median CUPTI time over the rounds, and its CUDA events' median. Further
# options (--placement, --pairs=K, --skip-mib=N, --cubin=FILE, --no-cupti) are passed on to both runs.
# usage: tests/gpu/timing-probe.sh [KERNEL_FILE] [ROUNDS] [OPTION...]
set -eu
out=${OUT_DIR:-/tmp/kforge-timing-probe}
mkdir -p "$out"
cuda=${CUDA_HOME:-/usr/local/cuda}
cupti=$(dirname "$(find "$cuda"/ "$cuda"/extras/CUPTI/ -name 'libcupti.so*' 2>/dev/null | head -1)")
export LD_LIBRARY_PATH="$cuda/lib64:$cupti:${LD_LIBRARY_PATH:-}"
g++ -std=c++20 -O2 -o "$out/timing-probe" tests/gpu/timing-probe.cpp -I"$cuda/include" \
    -I"$cuda/extras/CUPTI/include" -L"$cuda/lib64" -L"$cuda/lib64/stubs" -L"$cupti" \
    -lcuda -lcudart -lnvrtc -lcupti
{ date -u +%Y-%m-%dT%H:%M:%SZ; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } 2>/dev/null || true
"$out/timing-probe" "$@"
"$out/timing-probe" "$@" --runtime-init
