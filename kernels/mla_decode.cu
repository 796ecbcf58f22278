// §4 / §8 MLA decode, split-KV, absorbed form: one query token per request, n_head query heads over one shared
// latent KV head of D = 576 (kv_lora 512 + rope 64), bf16 cache, fp32 accumulation on tensor cores.
//
//   s[h][t] = scale * sum_d q[h][d] * kv[t][d]            (d over 576)
//   o[h][c] = sum_t softmax_t(s[h][t]) * kv[t][c]         (c over the first 512: the latent is also V)
//
// mla_split: block (split, head tile, request); 128 threads = 4 warps; HT = 16 heads (one m16 MMA tile). The
// block walks its slice of the context in tiles of TT tokens. Per tile: S = Q K^T (each warp TT/4 tokens,
// mma.m16n8k16 bf16 -> fp32, fragments through ldmatrix), online softmax across the 4 warps, P (bf16) to
// shared memory, O += P V (each warp 128 of the 512 output columns, V fragments through ldmatrix.trans).
//
// Two bodies, one build (gate LAUNCHLAB_MLA_PIPELINE):
//   mla_split       TT = 64, one stage: a block issues its whole tile (cp.async, 36 x 16 B per thread), waits
//                   for it, then computes on it. Load, then compute, never both: while a block computes, only
//                   another resident block can keep the SM's loads in flight (the lecture's reason for two
//                   blocks per SM).
//   mla_split_pipe  TT = 32, two stages: tile i + 1 is in flight (cp.async) while tile i is computed, so one
//                   block overlaps its own loads with its own math.
// Both fit two blocks per SM (about 94-96 KB of shared memory each, at most 255 registers by the launch bounds).
// Each writes the split's normalized output and its log-sum-exp (natural log) in fp32.
//
// mla_combine: block (32 output columns, head, request), 8 warps; merges the splits' outputs with weights
// exp(lse_s - max lse), adding the splits in index order (as FlashMLA's and FA3's combine kernels do):
// deterministic for a split count, different bits for a different one.
//
// bf16 is carried as its 16 bits (unsigned short): no CUDA header is needed, so NVRTC compiles this file
// anywhere (the course's offline build has no toolkit headers). Conversions below are exact: bf16 -> fp32 is
// a shift, fp32 -> bf16 rounds to nearest even (finite values; the kernel never forms a NaN).
//
// Both are kernels of the decode chain (pdl.cuh): the split waits for mla_rope_pack (the query and the cache
// row at this position), the combine for the split, each after its index math.
#include "pdl.cuh"

typedef unsigned short bf16;

__device__ __forceinline__ float bf16_to_f32(bf16 x) { return __uint_as_float(((unsigned)x) << 16); }

__device__ __forceinline__ bf16 f32_to_bf16_rn(float f) {
    const unsigned u = __float_as_uint(f);
    return (bf16)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

#define D 576
#define DV 512
#define HT 16
#define WARPS 4
#define MAX_SPLITS 1024                     // launchlab.splits.MAX_SPLITS: the combine's weight table
#define NEG_INF __int_as_float(0xff800000)  // -inf without <math.h>
#define PITCH (D + 8)                       // shared-memory row pitch in bf16: 1168 B = 73 x 16 B, so the 8 rows
                                            // an ldmatrix reads fall in 8 different 16-byte bank groups

__device__ __forceinline__ unsigned pack_bf16(bf16 lo, bf16 hi) { return (unsigned)lo | ((unsigned)hi << 16); }

__device__ __forceinline__ unsigned smem_addr(const void* p) {
    unsigned a;
    asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(a) : "l"(p));
    return a;
}

// 16 bytes global -> shared, bypassing L1; bytes = 0 fills the 16 bytes with zeros (a tail row)
__device__ __forceinline__ void cp_async16(void* dst, const void* src, int bytes) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(smem_addr(dst)), "l"(src), "r"(bytes)
                 : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N> __device__ __forceinline__ void cp_async_wait() {
    asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}

__device__ __forceinline__ void ldmatrix_x4(unsigned* r, const void* p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(smem_addr(p)));
}
__device__ __forceinline__ void ldmatrix_x2(unsigned* r, const void* p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];"
                 : "=r"(r[0]), "=r"(r[1]) : "r"(smem_addr(p)));
}
__device__ __forceinline__ void ldmatrix_x4_trans(unsigned* r, const void* p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(smem_addr(p)));
}

__device__ __forceinline__ void mma_bf16(float* c, const unsigned* a, unsigned b0, unsigned b1) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// shared memory of one block, in bytes (launchlab.mla.smem_bytes says the same)
template <int TT, int STAGES> struct Smem {
    static constexpr int kv = STAGES * TT * PITCH * 2, q = HT * PITCH * 2, p = HT * (TT + 8) * 2, red = WARPS * HT * 4;
    static constexpr int total = kv + q + p + red;
};

// rows [t0, t0 + valid) of the cache into one TT-row stage; rows past `valid` are zero-filled. The rows are
// contiguous in global memory, so 16-byte chunk i sits at byte 16 i there and at 16 (i + i / 72) in shared
// memory (one 16-byte pad per row): one multiply-high per chunk, fully unrolled.
template <int TT>
__device__ __forceinline__ void load_tile(bf16* dst, const bf16* __restrict__ kv_b, int t0, int valid) {
    constexpr int CHUNKS = TT * (D / 8), PER = CHUNKS / 128;     // 128 threads: 36 (TT = 64) or 18 (TT = 32)
    const uint4* src = reinterpret_cast<const uint4*>(kv_b + (long long)t0 * D);
    uint4* s16 = reinterpret_cast<uint4*>(dst);
    const int lim = valid * (D / 8);
#pragma unroll
    for (int k = 0; k < PER; ++k) {
        const int i = threadIdx.x + k * 128;
        const bool ok = i < lim;
        cp_async16(s16 + i + i / (D / 8), ok ? src + i : src, ok ? 16 : 0);
    }
}

template <int TT, int STAGES>
__device__ __forceinline__ void split_body(const bf16* __restrict__ q, const bf16* __restrict__ kv,
                                           float* __restrict__ o_split, float* __restrict__ lse_split,
                                           int n_head, int ctx, int slice, float scale) {
    constexpr int NT = TT / 32;                            // n-tiles of 8 tokens per warp in S = Q K^T
    constexpr int PP = TT + 8;                             // P's row pitch (bf16): 16 B-aligned, conflict-free
    extern __shared__ __align__(16) unsigned char smem_raw[];
    bf16* Ks = reinterpret_cast<bf16*>(smem_raw);                   // [STAGES][TT][PITCH]
    bf16* Qs = Ks + STAGES * TT * PITCH;                            // [HT][PITCH]
    bf16* Ps = Qs + HT * PITCH;                                     // [HT][PP]
    float* red = reinterpret_cast<float*>(Ps + HT * PP);           // [WARPS][HT] partial max / sum

    const int split = blockIdx.x, tile_h = blockIdx.y, b = blockIdx.z, splits = gridDim.x;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t4 = lane & 3;
    const int mi = lane >> 3, mr = lane & 7;              // ldmatrix: which 8x8 matrix this lane addresses, which row
    const int h0 = tile_h * HT;
    const int t_begin = split * slice, t_end = min(ctx, t_begin + slice);
    const int ntiles = t_end > t_begin ? (t_end - t_begin + TT - 1) / TT : 0;
    const bf16* kv_b = kv + (long long)b * ctx * D;
    pdl_enter();

    // Q tile (rows past n_head are zero), once per block, in the same group as the first cache tile
    for (int i = threadIdx.x; i < HT * (D / 8); i += blockDim.x) {
        const int r = i / (D / 8), c8 = i % (D / 8);
        const bool ok = h0 + r < n_head;
        cp_async16(Qs + r * PITCH + c8 * 8, q + ((long long)b * n_head + (ok ? h0 + r : 0)) * D + c8 * 8, ok ? 16 : 0);
    }
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {                // prologue: the first STAGES - 1 tiles in flight
        if (s < ntiles) load_tile<TT>(Ks + s * TT * PITCH, kv_b, t_begin + s * TT, min(TT, t_end - t_begin - s * TT));
        cp_async_commit();
    }

    const float sl2 = scale * 1.4426950408889634f;        // exp(x) = exp2(x * log2 e)
    float m_run[2] = {NEG_INF, NEG_INF};                  // rows g and g + 8: running max (log2 domain)
    float l_run[2] = {0.f, 0.f};                          // running sum of exp2
    float acc[16][4];                                     // O: 16 n-tiles of 8 columns, rows g / g + 8
#pragma unroll
    for (int j = 0; j < 16; ++j) acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.f;

    for (int it = 0; it < ntiles; ++it) {
        const int t0 = t_begin + it * TT, valid = min(TT, t_end - t0);
        {   // issue the tile STAGES - 1 ahead (one stage: this tile), then wait for this one
            const int ahead = it + STAGES - 1;
            if (ahead < ntiles)
                load_tile<TT>(Ks + (ahead % STAGES) * TT * PITCH, kv_b, t_begin + ahead * TT,
                              min(TT, t_end - t_begin - ahead * TT));
            cp_async_commit();
            cp_async_wait<STAGES - 1>();
        }
        __syncthreads();
        const bf16* Kt = Ks + (it % STAGES) * TT * PITCH;

        // S for this warp's TT/4 tokens
        float s[NT][4];
#pragma unroll
        for (int n = 0; n < NT; ++n) s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.f;
        const int tok0 = warp * (TT / 4);
#pragma unroll 4
        for (int k = 0; k < D; k += 16) {
            unsigned a[4];
            ldmatrix_x4(a, Qs + ((mi & 1) * 8 + mr) * PITCH + k + (mi >> 1) * 8);
            if (NT == 2) {
                unsigned bb[4];                            // tokens tok0..+7 then +8..+15; k halves
                ldmatrix_x4(bb, Kt + (tok0 + (mi >> 1) * 8 + mr) * PITCH + k + (mi & 1) * 8);
                mma_bf16(s[0], a, bb[0], bb[1]);
                mma_bf16(s[NT - 1], a, bb[2], bb[3]);
            } else {
                unsigned bb[2];
                ldmatrix_x2(bb, Kt + (tok0 + mr) * PITCH + k + (mi & 1) * 8);
                mma_bf16(s[0], a, bb[0], bb[1]);
            }
        }
        // scale, mask the tail, row max over this warp's tokens
        float mx[2] = {NEG_INF, NEG_INF};
#pragma unroll
        for (int n = 0; n < NT; ++n)
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const int tok = tok0 + n * 8 + 2 * t4 + (e & 1);
                s[n][e] = tok < valid ? s[n][e] * sl2 : NEG_INF;
                mx[e >> 1] = fmaxf(mx[e >> 1], s[n][e]);
            }
#pragma unroll
        for (int r = 0; r < 2; ++r) {
            mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
            mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
        }
        if (t4 == 0) { red[warp * HT + g] = mx[0]; red[warp * HT + g + 8] = mx[1]; }
        __syncthreads();
        float m_new[2], corr[2];
#pragma unroll
        for (int r = 0; r < 2; ++r) {
            float m = m_run[r];
#pragma unroll
            for (int w = 0; w < WARPS; ++w) m = fmaxf(m, red[w * HT + g + 8 * r]);
            m_new[r] = m;                                  // finite: every tile has at least one valid token
            corr[r] = exp2f(m_run[r] - m);                 // exp2(-inf) = 0 on the first tile
        }
        __syncthreads();                                   // red is reused for the sums
        float sum[2] = {0.f, 0.f};
#pragma unroll
        for (int n = 0; n < NT; ++n)
#pragma unroll
            for (int e = 0; e < 4; e += 2) {
                const int r = e >> 1;
                const bf16 b0 = f32_to_bf16_rn(exp2f(s[n][e] - m_new[r]));
                const bf16 b1 = f32_to_bf16_rn(exp2f(s[n][e + 1] - m_new[r]));
                sum[r] += bf16_to_f32(b0) + bf16_to_f32(b1);             // sum what P V will use
                *reinterpret_cast<unsigned*>(Ps + (g + 8 * r) * PP + tok0 + n * 8 + 2 * t4) = pack_bf16(b0, b1);
            }
#pragma unroll
        for (int r = 0; r < 2; ++r) {
            sum[r] += __shfl_xor_sync(0xffffffffu, sum[r], 1);
            sum[r] += __shfl_xor_sync(0xffffffffu, sum[r], 2);
        }
        if (t4 == 0) { red[warp * HT + g] = sum[0]; red[warp * HT + g + 8] = sum[1]; }
        __syncthreads();                                   // P and the partial sums are complete
#pragma unroll
        for (int r = 0; r < 2; ++r) {
            float tot = 0.f;
#pragma unroll
            for (int w = 0; w < WARPS; ++w) tot += red[w * HT + g + 8 * r];   // warps in order: fixed association
            l_run[r] = l_run[r] * corr[r] + tot;
            m_run[r] = m_new[r];
        }
#pragma unroll
        for (int j = 0; j < 16; ++j) {
            acc[j][0] *= corr[0]; acc[j][1] *= corr[0];
            acc[j][2] *= corr[1]; acc[j][3] *= corr[1];
        }
        // O += P V: this warp's 128 output columns, k over the tile's tokens
#pragma unroll
        for (int kk = 0; kk < TT; kk += 16) {
            unsigned a[4];
            ldmatrix_x4(a, Ps + ((mi & 1) * 8 + mr) * PP + kk + (mi >> 1) * 8);
#pragma unroll
            for (int j = 0; j < 16; j += 2) {              // two n-tiles per ldmatrix.x4.trans
                unsigned bb[4];
                ldmatrix_x4_trans(bb, Kt + (kk + (mi & 1) * 8 + mr) * PITCH + warp * 128 + j * 8 + (mi >> 1) * 8);
                mma_bf16(acc[j], a, bb[0], bb[1]);
                mma_bf16(acc[j + 1], a, bb[2], bb[3]);
            }
        }
        __syncthreads();                                   // this stage (and P, red) may be overwritten now
    }
    cp_async_wait<0>();                                    // nothing left in flight at exit

    // the split's normalized output and its LSE (natural log); rows past n_head are not written
#pragma unroll
    for (int r = 0; r < 2; ++r) {
        const int h = h0 + g + 8 * r;
        if (h >= n_head) continue;
        const float inv = l_run[r] > 0.f ? 1.f / l_run[r] : 0.f;
        float* out = o_split + (((long long)b * splits + split) * n_head + h) * DV;
#pragma unroll
        for (int j = 0; j < 16; ++j) {
            const int col = warp * 128 + j * 8 + 2 * t4;
            *reinterpret_cast<float2*>(out + col) = make_float2(acc[j][2 * r] * inv, acc[j][2 * r + 1] * inv);
        }
        if (warp == 0 && t4 == 0)
            lse_split[((long long)b * splits + split) * n_head + h] =
                l_run[r] > 0.f ? (m_run[r] + log2f(l_run[r])) * 0.6931471805599453f : NEG_INF;
    }
}

extern "C" __global__ void __launch_bounds__(128, 2)
mla_split(const bf16* __restrict__ q, const bf16* __restrict__ kv, float* __restrict__ o_split,
          float* __restrict__ lse_split, int n_head, int ctx, int slice, float scale) {
    split_body<64, 1>(q, kv, o_split, lse_split, n_head, ctx, slice, scale);
}

extern "C" __global__ void __launch_bounds__(128, 2)
mla_split_pipe(const bf16* __restrict__ q, const bf16* __restrict__ kv, float* __restrict__ o_split,
               float* __restrict__ lse_split, int n_head, int ctx, int slice, float scale) {
    split_body<32, 2>(q, kv, o_split, lse_split, n_head, ctx, slice, scale);
}

extern "C" __global__ void __launch_bounds__(128, 1)
mla_split_deep(const bf16* __restrict__ q, const bf16* __restrict__ kv, float* __restrict__ o_split,
               float* __restrict__ lse_split, int n_head, int ctx, int slice, float scale) {
    split_body<32, 3>(q, kv, o_split, lse_split, n_head, ctx, slice, scale);
}

#define COMBINE_WARPS 8
#define COMBINE_COLS 32                             // a block covers 32 columns: 8 lanes x float4 per split row,
                                                    // so one warp load reads 4 splits' rows of 128 B

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}
__device__ __forceinline__ float warp_sum(float v) {          // a fixed butterfly: the same order every run
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

#define COMBINE_PRE 8                               // splits per lane loaded before the weights are known

extern "C" __global__ void __launch_bounds__(COMBINE_WARPS * 32)
mla_combine(const float* __restrict__ o_split, const float* __restrict__ lse_split,
            float* __restrict__ out,                       // [batch][n_head][DV]
            int n_head, int splits, float drop_below) {
    __shared__ float w[MAX_SPLITS];
    __shared__ float red[COMBINE_WARPS];
    __shared__ float4 part[COMBINE_WARPS][COMBINE_COLS / 4];
    const int h = blockIdx.y, b = blockIdx.z, warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int r = lane >> 3, c4 = lane & 7;               // lane (r, c4): split row r of 4, float4 column c4 of 8
    const int c = blockIdx.x * COMBINE_COLS + 4 * c4;
    const float* lse = lse_split + (long long)b * splits * n_head + h;
    const float* o = o_split + ((long long)b * splits * n_head + h) * DV + c;
    const long long step = (long long)n_head * DV;
    pdl_enter();
    // lane (r, c4) of warp w owns splits 4 w + r + 32 j, j = 0, 1, ...: its first COMBINE_PRE outputs are
    // loaded now, before the weights exist, so their latency hides behind the LSE reductions below
    float4 v[COMBINE_PRE];
#pragma unroll
    for (int j = 0; j < COMBINE_PRE; ++j) {
        const int s = 4 * warp + r + 32 * j;
        v[j] = s < splits ? *reinterpret_cast<const float4*>(o + s * step) : make_float4(0.f, 0.f, 0.f, 0.f);
    }
    // the largest LSE: a tree over the block (max is exact in any order)
    float m = NEG_INF;
    for (int s = threadIdx.x; s < splits; s += blockDim.x) {
        w[s] = lse[(long long)s * n_head];
        m = fmaxf(m, w[s]);
    }
    m = warp_max(m);
    if (lane == 0) red[warp] = m;
    __syncthreads();
    m = red[0];
#pragma unroll
    for (int k = 1; k < COMBINE_WARPS; ++k) m = fmaxf(m, red[k]);
    // the weights exp(lse_s - m) (an empty split weighs 0) and their sum in a fixed order: per thread in
    // split order, then a fixed butterfly per warp, then the warps in order. §8's approximation: a split
    // whose weight is below drop_below (0: never; the host passes it only past 16,384 tokens) weighs 0.
    float ws = 0.f;
    for (int s = threadIdx.x; s < splits; s += blockDim.x) {
        float wv = expf(w[s] - m);
        if (wv < drop_below) wv = 0.f;
        w[s] = wv;
        ws += wv;
    }
    ws = warp_sum(ws);
    __syncthreads();                                       // red (the maxima) has been read by every thread
    if (lane == 0) red[warp] = ws;
    __syncthreads();                                       // the weights and their partial sums are complete
    // each lane adds its splits in increasing order (a weight of 0 adds exactly nothing; past the preloaded
    // ones, a split of weight 0 is not even read), then a fixed butterfly over r, then the warps in order:
    // a fixed association for a given split count
    float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
    for (int j = 0; j < COMBINE_PRE; ++j) {
        const int s = 4 * warp + r + 32 * j;
        if (s < splits) {
            const float ws_ = w[s];
            acc.x += ws_ * v[j].x; acc.y += ws_ * v[j].y; acc.z += ws_ * v[j].z; acc.w += ws_ * v[j].w;
        }
    }
#pragma unroll 4
    for (int s = 4 * warp + r + 32 * COMBINE_PRE; s < splits; s += 32) {
        const float ws_ = w[s];
        if (ws_ == 0.f) continue;
        const float4 x = *reinterpret_cast<const float4*>(o + s * step);
        acc.x += ws_ * x.x; acc.y += ws_ * x.y; acc.z += ws_ * x.z; acc.w += ws_ * x.w;
    }
#pragma unroll
    for (int off = 8; off <= 16; off <<= 1) {
        acc.x += __shfl_xor_sync(0xffffffffu, acc.x, off); acc.y += __shfl_xor_sync(0xffffffffu, acc.y, off);
        acc.z += __shfl_xor_sync(0xffffffffu, acc.z, off); acc.w += __shfl_xor_sync(0xffffffffu, acc.w, off);
    }
    if (r == 0) part[warp][c4] = acc;
    __syncthreads();
    if (threadIdx.x < COMBINE_COLS / 4) {
        float wsum = red[0];
        for (int k = 1; k < COMBINE_WARPS; ++k) wsum += red[k];
        float4 t = part[0][c4];
        for (int k = 1; k < COMBINE_WARPS; ++k) {
            const float4 p = part[k][c4];
            t.x += p.x; t.y += p.y; t.z += p.z; t.w += p.w;
        }
        *reinterpret_cast<float4*>(out + ((long long)b * n_head + h) * DV + c) =
            make_float4(t.x / wsum, t.y / wsum, t.z / wsum, t.w / wsum);
    }
}
