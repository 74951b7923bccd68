#!/bin/bash
# On the GPU host: the wgmma + TMA GEMM experts checked against cuBLAS and timed beside it
# (tests/gpu/wgmma-gemm-check.cu). Needs nvcc, cuBLAS and an sm_90 GPU; prints one line per check.
# usage: tests/gpu/wgmma-gemm-check.sh [OUT_DIR]
set -eu
out=${1:-/tmp/kforge-wgmma-check}
mkdir -p "$out"
cuda=${CUDA_HOME:-/usr/local/cuda}
export PATH="$cuda/bin:$PATH" LD_LIBRARY_PATH="$cuda/lib64:${LD_LIBRARY_PATH:-}"
sms=${SMS:-132}  # the H100/H200 SXM count; set SMS for another GPU
nvcc -O2 -std=c++17 -o "$out/check" tests/gpu/wgmma-gemm-check.cu -lcuda -lcublas
for t in bf16 fp16; do
    for cfg in "256 4" "128 4"; do
        set -- $cfg
        nvcc -gencode=arch=compute_90a,code=sm_90a -cubin -DBN=$1 -DSTAGES=$2 \
            -o "$out/$t-$1-$2.cubin" "resources/experts/gemm/gemm_${t}_wgmma_tma.cu"
        for size in "128 128 64" "300 264 136" "1000 776 520" "4096 4096 4096"; do
            "$out/check" "$out/$t-$1-$2.cubin" "gemm_$t" "$t" $size "$1" "$2" "$sms" | head -2
        done
    done
done
