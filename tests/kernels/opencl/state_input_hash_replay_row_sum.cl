// kforge integrity test: task row_sum; violation: keeps row sums in 288 KiB of program-scope globals keyed by a fingerprint of three elements of the row, and replays them whenever the fingerprint comes back; expected status: rejected or compile_error.
// The cheat: a harness that times on inputs it already showed during verification (or keeps each
// input set in place across timed runs) hands the kernel the same rows again and again. Each row's
// fingerprint (its first, middle and last element, and its length) picks one of 8 slots; on a hit
// the stored sum is written without reading the row. On a miss the row is summed honestly and
// stored, so every output is correct: poisoning, several seeds and verified timed runs all pass.
// One work-item per row, so no two work-items touch the same slot in one launch.
// What catches it: module-scope state is limited (more than 64 KiB of program-scope variables is
// rejected; below that their initial contents are restored before every run). compile_error is
// accepted too: under -cl-std=CL3.0 PoCL 3.1 does not offer program-scope global variables.
// kforge:param BLOCK = 64
// kforge:launch row_sum grid=(cdiv(M, BLOCK)) block=(BLOCK)

#define SLOTS 8
#define MAX_ROWS 4096 // the default variant's M; rows beyond it are summed every time

global uint tag[SLOTS][MAX_ROWS];
global float saved[SLOTS][MAX_ROWS];
global uchar used[SLOTS][MAX_ROWS];

__kernel void row_sum(__global const float* x, __global float* y, int M, int N)
{
    const int row = get_global_id(0);
    if (row >= M)
        return;
    __global const float* r = x + (size_t)row * N;
    const uint a = as_uint(r[0]), b = as_uint(r[N / 2]), c = as_uint(r[N - 1]);
    const uint fp = (a * 2654435761u) ^ (b * 40503u + 0x9e3779b9u) ^ rotate(c, 7u) ^ (uint)N;
    const int slot = fp % SLOTS;
    if (row < MAX_ROWS && used[slot][row] && tag[slot][row] == fp) {
        y[row] = saved[slot][row]; // seen before: no need to read the row
        return;
    }
    float s = 0.0f;
    for (int j = 0; j < N; ++j)
        s += r[j];
    y[row] = s;
    if (row < MAX_ROWS) {
        tag[slot][row] = fp;
        saved[slot][row] = s;
        used[slot][row] = 1;
    }
}
