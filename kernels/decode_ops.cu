// The decode step's small kernels (launchlab.decode): the glue between the course's norms, KDA and MLA
// kernels and the cuBLAS projections. Each has a numpy reference in launchlab/decode.py.
//
//   embed_row         the token's row of the (vocab-shard) embedding, bf16 -> fp32 residual stream
//   to_bf16           fp32 -> bf16 bits, round to nearest even (the activations cuBLAS reads)
//   add_inplace       residual add, fp32
//   silu_mul_to_bf16  the MLP's gate: bf16(silu(g) * u) from [g | u]
//   kda_prep          per KDA head: q, k L2-normalized (q also scaled by K^-1/2), v copied, the log-decay
//                     g = -softplus(raw) and beta = sigmoid(raw). Grid = n_head: a grid derived from the
//                     head count that is nevertheless fine -- it moves 25 KB, so its time is one launch
//   mla_rope_pack     per MLA query head (and one block for the new latent row): RoPE on the 64 rope
//                     channels at this position, bf16 out (the query, and the cache row at `pos`)
//   argmax_f32        greedy next token: one block, lowest index on ties
//
// All of them are kernels of the decode chain (pdl.cuh): each computes its indices, then waits for its
// predecessor (pdl_enter) before it touches the chain's memory. mla_rope_pack also computes its rotation
// angles first: they depend only on the position, a launch parameter.
#include "pdl.cuh"

typedef unsigned short bf16;

__device__ __forceinline__ float bf16_to_f32(bf16 x) { return __uint_as_float(((unsigned)x) << 16); }
__device__ __forceinline__ bf16 f32_to_bf16_rn(float f) {
    const unsigned u = __float_as_uint(f);
    return (bf16)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

extern "C" __global__ void embed_row(const bf16* __restrict__ table, const int* __restrict__ token, int hidden,
                                     float* __restrict__ out) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    pdl_enter();                                   // token[0]: written by the previous step's argmax
    if (i < hidden) out[i] = bf16_to_f32(table[(long long)token[0] * hidden + i]);
}

extern "C" __global__ void to_bf16(const float* __restrict__ x, bf16* __restrict__ y, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    pdl_enter();
    if (i < n) y[i] = f32_to_bf16_rn(x[i]);
}

extern "C" __global__ void add_inplace(float* __restrict__ h, const float* __restrict__ a, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    pdl_enter();
    if (i < n) h[i] = h[i] + a[i];
}

extern "C" __global__ void silu_mul_to_bf16(const float* __restrict__ gu, bf16* __restrict__ y, int inter) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    pdl_enter();
    if (i < inter) {
        const float g = gu[i], u = gu[inter + i];
        y[i] = f32_to_bf16_rn(__fdiv_rn(g, 1.f + expf(-g)) * u);
    }
}

__device__ __forceinline__ float block_sum128(float v, float* red) {   // 128 threads, a fixed tree
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = v;
    __syncthreads();
    const float t = (red[0] + red[1]) + (red[2] + red[3]);
    __syncthreads();
    return t;
}

// proj = [q (H x 128) | k (H x 128) | v (H x 128) | g (H x 128) | beta (H)], one block of 128 per head
extern "C" __global__ void __launch_bounds__(128)
kda_prep(const float* __restrict__ proj, float* __restrict__ q, float* __restrict__ k, float* __restrict__ v,
         float* __restrict__ g, float* __restrict__ beta, int n_head) {
    __shared__ float red[4];
    const int h = blockIdx.x, i = threadIdx.x, hk = n_head * 128;
    pdl_enter();
    const float qi = proj[h * 128 + i], ki = proj[hk + h * 128 + i];
    const float qn = block_sum128(qi * qi, red), kn = block_sum128(ki * ki, red);
    q[h * 128 + i] = qi * rsqrtf(qn + 1e-6f) * 0.08838834764831845f;      // unit norm, then x 128^-1/2
    k[h * 128 + i] = ki * rsqrtf(kn + 1e-6f);
    v[h * 128 + i] = proj[2 * hk + h * 128 + i];
    const float gr = proj[3 * hk + h * 128 + i];
    g[h * 128 + i] = -(gr > 20.f ? gr : log1pf(expf(gr)));                  // log-decay <= 0
    if (i == 0) beta[h] = 1.f / (1.f + expf(-proj[4 * hk + h]));
}

// q_in: n_head rows of 576 fp32 (latent 512 + rope 64). The new cache row takes its 512 latent channels from
// kv_lat (already normalized) and its 64 rope channels from kv_raw[512..575]. Block b < n_head rotates query
// head b; block n_head writes the cache row. Threads 0..31 rotate the 32 rope pairs.
extern "C" __global__ void __launch_bounds__(256)
mla_rope_pack(const float* __restrict__ q_in, const float* __restrict__ kv_lat, const float* __restrict__ kv_raw,
              bf16* __restrict__ q_out, bf16* __restrict__ cache_row, int n_head, int pos) {
    const int b = blockIdx.x;
    const float* lat = b < n_head ? q_in + b * 576 : kv_lat;
    const float* rope = b < n_head ? q_in + b * 576 + 512 : kv_raw + 512;
    bf16* dst = b < n_head ? q_out + b * 576 : cache_row;
    float s = 0.f, c = 0.f;
    if (threadIdx.x < 32) {                        // before the wait: the angle depends only on `pos`
        const float theta = (float)pos * exp2f(-(float)threadIdx.x * (13.287712379549449f / 32.f));  // 10000^(-i/32)
        sincosf(theta, &s, &c);
    }
    pdl_enter();
    for (int k = threadIdx.x; k < 512; k += blockDim.x) dst[k] = f32_to_bf16_rn(lat[k]);
    if (threadIdx.x < 32) {
        const int i = threadIdx.x;
        const float x0 = rope[i], x1 = rope[32 + i];
        dst[512 + i] = f32_to_bf16_rn(x0 * c - x1 * s);
        dst[512 + 32 + i] = f32_to_bf16_rn(x0 * s + x1 * c);
    }
}

extern "C" __global__ void __launch_bounds__(1024)
argmax_f32(const float* __restrict__ x, int n, int* __restrict__ out) {
    __shared__ float bv[32];
    __shared__ int bi[32];
    float best = __int_as_float(0xff800000);
    int idx = 0x7fffffff;
    pdl_enter();
    for (int i = threadIdx.x; i < n; i += blockDim.x)
        if (x[i] > best) { best = x[i]; idx = i; }                   // increasing i: the first maximum
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        const float ob = __shfl_xor_sync(0xffffffffu, best, o);
        const int oi = __shfl_xor_sync(0xffffffffu, idx, o);
        if (ob > best || (ob == best && oi < idx)) { best = ob; idx = oi; }
    }
    if ((threadIdx.x & 31) == 0) { bv[threadIdx.x >> 5] = best; bi[threadIdx.x >> 5] = idx; }
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int w = 1; w < (int)(blockDim.x >> 5); ++w)
            if (bv[w] > best || (bv[w] == best && bi[w] < idx)) { best = bv[w]; idx = bi[w]; }
        out[0] = idx;
    }
}
