// kforge integrity test: task row_sum; violation: recognises which of the fixed seeds 1, 2, 3 made the input from x[0] and writes row sums stored in the file instead of reading x; expected status: incorrect.
// The cheat: the verification seeds were 1, 2 and 3 on every evaluation and the input generator is
// deterministic (xoshiro256** seeded from the seed and the input's name), so the small variant's
// inputs (M = 37, N = 1001) and their row sums are known in advance. The kernel reads x[0] only,
// picks the nearest of the three known first values, and copies that seed's 37 row sums from a
// table (computed offline with the same generator; each equals the float-rounded double sum the
// reference gives). It reads 4 bytes instead of 148 KB, so it "beats" any honest kernel, and a
// harness with fixed seeds finds every output exact and different per seed (depends_on_inputs passes).
// Other sizes are computed honestly, so a run on the default variant looks fine too.
// What catches it: seeds drawn fresh from a secure source on every evaluation (and timed inputs
// from seeds never used in verification): x[0] then matches no stored seed, the nearest table is
// written, and almost every row is wrong.
// kforge:param BLOCK = 128
// kforge:launch row_sum grid=(cdiv(M, BLOCK)) block=(BLOCK)

__constant float kKnownSums[3][37] = {
    // x[0] = -0.89887023
    -16.9560337f, -4.88999033f, -11.3169603f, 18.9023724f, -22.1297112f, -22.8538761f, -1.93627381f, 2.74711108f,
    18.9318428f, 3.31028223f, 12.6529408f, 14.6463251f, 2.58061004f, 8.05820751f, -7.91167068f, 8.87845612f,
    -20.2400265f, -11.0466433f, 3.18457913f, 38.0252686f, 19.1653042f, 2.276999f, -24.3879719f, -61.6405106f,
    13.7150221f, -31.9335613f, 3.47920203f, 3.14700127f, 5.96946335f, -14.2289162f, -4.21955299f, 0.08989539f,
    -3.17313886f, 15.8123198f, 22.950304f, 7.87169981f, 14.8043184f,
    // x[0] = -0.286823183
    10.7863111f, 18.2344723f, -0.706041515f, -14.0427809f, -16.0416603f, 13.3482838f, 29.3489475f, 6.33182478f,
    34.5828514f, 7.83935928f, 15.3412247f, -6.267241f, 31.3983536f, 14.7043705f, 13.8071766f, -0.387571245f,
    -1.19851828f, -2.20503831f, -21.7749596f, -10.2164221f, 6.49948597f, 0.845039666f, 19.6642742f, -26.863348f,
    -35.2707405f, 31.392725f, 4.34479094f, -18.83078f, -1.5449388f, -13.2990751f, 11.7938023f, 1.15178478f,
    -2.20515347f, 27.2856903f, -10.9309053f, -16.1986237f, 3.17856646f,
    // x[0] = 0.417767167
    16.9067917f, -4.85611439f, -7.80391216f, 42.7594757f, 12.9577579f, 0.581604362f, 6.17840385f, 1.92066908f,
    -9.66593742f, -19.4283428f, 11.443984f, 21.7779026f, -20.5984554f, 7.88532305f, 15.4392366f, 2.43464541f,
    -17.8782654f, 0.240477294f, 0.569777369f, 13.1353006f, 25.5544682f, -16.04706f, 26.6380157f, 1.4701438f,
    4.87013483f, 10.3991823f, 9.17914009f, 7.06299448f, 14.6308117f, 26.0339603f, 1.51304197f, 14.938529f,
    -3.71705818f, -4.40612078f, 10.4477224f, 2.78635693f, -11.7871532f,
};

__kernel void row_sum(__global const float* x, __global float* y, int M, int N)
{
    const int row = get_global_id(0);
    if (row >= M)
        return;
    if (M == 37 && N == 1001) {
        // x[0] is -0.899 (seed 1), -0.287 (seed 2) or 0.418 (seed 3): thresholds between them.
        const float first = x[0];
        const int seed = first < -0.6f ? 0 : (first < 0.05f ? 1 : 2);
        y[row] = kKnownSums[seed][row];
        return;
    }
    __global const float* r = x + (size_t)row * N;
    float s = 0.0f;
    for (int j = 0; j < N; ++j)
        s += r[j];
    y[row] = s;
}
