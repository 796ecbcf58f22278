// §3's contrast kernel: the KDA decode step in the shape the lecture's profile implies -- one block per head,
// one thread per state column, each thread walking its column's 128 rows one after another.
//
// The same step as kda_decode.cu (per head h, per column j):
//   S[i][j] *= exp(g[i]);  sk[j] = sum_i S[i][j]*k[i];  d[j] = beta*(v[j] - sk[j])
//   S[i][j] += k[i]*d[j];  o[j] = sum_i S[i][j]*q[i]
// with the same j-major state s[(h*V + j)*K + i] and the same staging of S*exp(g) in `scratch` (four trips of
// the state per step: read, write the staged product, read it back, write the new state -- the lecture's
// ~3.1 MB per launch at 12 heads).
//
// Geometry (fixed by the shape, checked by the host): grid = n_head, blockDim.x = V = 128 -- thread j owns
// column j. The sums over i are one serial fma chain per thread (no shuffle tree), so this kernel rounds
// differently from kda_decode.cu: it is compared with the float64 reference, not byte for byte.
//
// Why it is slow, by construction: a thread's 128-row walk is a chain of dependent adds, and the 32 threads of
// a warp read 32 different columns, 512 B apart, so each warp-wide load touches 32 cache lines. Twelve blocks
// of four warps each leave 120 of the H200's 132 SMs idle. This file is its own kernel family so that adding
// it changed no existing recording's source hash.
#define KC 128

__global__ void kda_column(const float* __restrict__ q, const float* __restrict__ k, const float* __restrict__ v,
                           const float* __restrict__ g, const float* __restrict__ beta,
                           float* __restrict__ state, float* __restrict__ scratch, float* __restrict__ o, int V) {
    const int h = blockIdx.x;
    const int j = threadIdx.x;                        // one state column per thread (blockDim.x == V)
    const float* gh = g + h * KC;                     // the head's vectors, read row by row from global
    const float* kh = k + h * KC;                     // memory inside the walk (every thread of the block
    const float* qh = q + h * KC;                     // reads the same row: a broadcast)
    const float b = beta[h];
    float* S = state + ((long long)h * V + j) * KC;
    float* D = scratch + ((long long)h * V + j) * KC;

    // pass 1: decay each row, stage it, accumulate sk -- one row at a time
    float sk = 0.0f;
#pragma unroll 1
    for (int i = 0; i < KC; ++i) {
        const float t = S[i] * expf(gh[i]);
        D[i] = t;
        sk = fmaf(t, kh[i], sk);
    }
    const float d = b * (v[h * V + j] - sk);
    __syncthreads();                                  // the staging barrier, as in main's kernel

    // pass 2: read the staged row back, rank-1 update, write the state, accumulate o -- one row at a time
    float oj = 0.0f;
#pragma unroll 1
    for (int i = 0; i < KC; ++i) {
        const float n = D[i] + __fmul_rn(kh[i], d);
        S[i] = n;
        oj = fmaf(n, qh[i], oj);
    }
    o[h * V + j] = oj;
}
