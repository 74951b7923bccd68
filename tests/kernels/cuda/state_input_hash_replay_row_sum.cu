// kforge integrity test: task row_sum; violation: keeps row sums in 288 KiB of __device__ globals keyed by a fingerprint of three elements of the row, and replays them whenever the fingerprint comes back; expected status: rejected.
// The cheat: a harness that times on inputs it already showed during verification (or keeps each
// input set in place across timed runs) hands the kernel the same rows again and again. Each row's
// fingerprint (its first, middle and last element, and its length) picks one of 8 slots; on a hit
// the stored sum is written without reading the row, so timed runs read 12 bytes per row instead
// of 4 KB. On a miss the row is summed honestly and stored, so every output is correct: poisoning,
// several seeds and verifying every timed run all pass. One work-item per row, so no two
// work-items ever touch the same slot in one launch.
// What catches it: module-scope state is limited (the hardened worker rejects programs with more
// than 64 KiB of __device__ variables; below that it restores their initial contents before every
// run, which turns the cache into dead weight). Timed inputs never shown during verification alone
// do not catch it: the second timed run on an input set hits the cache.
// kforge:param BLOCK = 64
// kforge:launch row_sum grid=(cdiv(M, BLOCK)) block=(BLOCK)

#define SLOTS 8
#define MAX_ROWS 4096 // the default variant's M; rows beyond it are summed every time

__device__ unsigned int tag[SLOTS][MAX_ROWS];
__device__ float saved[SLOTS][MAX_ROWS];
__device__ unsigned char used[SLOTS][MAX_ROWS];

extern "C" __global__ void row_sum(const float* x, float* y, int M, int N)
{
    const int row = blockIdx.x * BLOCK + threadIdx.x;
    if (row >= M)
        return;
    const float* r = x + (size_t)row * N;
    const unsigned int a = __float_as_uint(r[0]), b = __float_as_uint(r[N / 2]), c = __float_as_uint(r[N - 1]);
    const unsigned int fp = (a * 2654435761u) ^ (b * 40503u + 0x9e3779b9u) ^ (c << 7 | c >> 25) ^ (unsigned int)N;
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
