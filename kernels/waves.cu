// §1 wave quantization.
//
// fixed_work: every block does the same fixed amount of latency-bound arithmetic (a dependent FMA chain per
// thread), and a block's dynamic shared memory is sized only to set how many blocks fit on one SM. With few
// warps per SM the co-resident blocks do not slow each other, so a launch takes
//     ceil(grid / blocks_per_wave) * time_per_block,   blocks_per_wave = SMs * resident blocks per SM
// and the time is a staircase with its steps at multiples of blocks_per_wave.
//
// fixed_bytes: the memory-bound contrast. Every block reads its own fixed chunk; many blocks are resident and
// they share the bandwidth, so finishing times spread out and the steps wash into a ramp.
#include "common.cuh"
#include "timeline.cuh"

template <bool TL>
__device__ __forceinline__ void fixed_work_body(float* __restrict__ out, int iters, float a, float b) {
    BlockStamp<TL> stamp;
    extern __shared__ float residency_pad[];          // its size sets residency; the kernel barely touches it
    float x = 1.0e-3f * (float)(threadIdx.x + 1);
#pragma unroll 8
    for (int i = 0; i < iters; ++i) x = fmaf(x, a, b);  // a dependent chain: one FMA latency per step
    if (threadIdx.x == 0) residency_pad[0] = x;
    out[(long long)blockIdx.x * blockDim.x + threadIdx.x] = x;
    stamp.stop();
}

extern "C" __global__ void fixed_work(float* __restrict__ out, int iters, float a, float b) {
    fixed_work_body<false>(out, iters, a, b);
}

// The same, stamping each block's SM and lifetime (timeline.cuh): where the waves land.
extern "C" __global__ void fixed_work_timeline(float* __restrict__ out, int iters, float a, float b) {
    fixed_work_body<true>(out, iters, a, b);
}

extern "C" __global__ void fixed_bytes(const float4* __restrict__ src, int vec_per_block, float* __restrict__ partial) {
    __shared__ float shm[32];
    const float4* __restrict__ p = src + (long long)blockIdx.x * vec_per_block;
    float acc = 0.0f;
    for (int i = threadIdx.x; i < vec_per_block; i += blockDim.x) {
        const float4 v = p[i];
        acc += (v.x + v.y) + (v.z + v.w);
    }
    const float total = block_sum(acc, shm);
    if (threadIdx.x == 0) partial[blockIdx.x] = total;
}
