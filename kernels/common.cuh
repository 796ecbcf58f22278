// Shared device helpers for the course's kernels. Included by the .cu files in this folder; its sha256 is
// part of every recording that ran a kernel including it.
#pragma once

// Sum over the block: a warp shuffle tree inside each warp, then warp 0 folds the per-warp sums.
// `shm` needs one float per warp (at most 32). Every thread gets the block total back.
__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
    return v;
}

__device__ __forceinline__ float block_sum(float v, float* shm) {
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    const int nwarps = (blockDim.x + 31) >> 5;
    v = warp_sum(v);
    if (lane == 0) shm[warp] = v;
    __syncthreads();
    float t = (threadIdx.x < nwarps) ? shm[threadIdx.x] : 0.0f;
    if (warp == 0) t = warp_sum(t);
    if (threadIdx.x == 0) shm[0] = t;
    __syncthreads();
    const float total = shm[0];
    __syncthreads();   // shm may be reused by the caller
    return total;
}
