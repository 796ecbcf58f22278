// §1 streaming read: how much of the HBM bandwidth a launch shape can pull.
//
// Each thread walks the buffer with a grid-stride loop and keeps UNROLL independent loads of VEC floats in
// flight before it consumes any of them, so the bytes a resident thread has outstanding are
// VEC * 4 * UNROLL. The sum is kept (one partial per block) so that the loads cannot be elided, and so that
// the kernel has a numpy reference (bandwidth.reference_partials).
//
// Variants (chosen at launch from LAUNCHLAB_STREAM_VEC / LAUNCHLAB_STREAM_UNROLL, one build):
//   stream_read<1,1>  scalar loads, one in flight per thread      (baseline)
//   stream_read<4,1>  float4 loads, one in flight
//   stream_read<1,4>  scalar loads, four in flight
//   stream_read<4,4>  float4 loads, four in flight                 (default)
// stream_read_timeline<VEC, UNROLL> is the same loop stamping each block's SM and lifetime (timeline.cuh),
// held to the default's 32 registers by __launch_bounds__ so it runs at the same occupancy as the kernel it
// observes; stream_read itself compiles without it.
#include "common.cuh"
#include "timeline.cuh"

template <int VEC> struct vec_of;
template <> struct vec_of<1> { using type = float; };
template <> struct vec_of<4> { using type = float4; };

__device__ __forceinline__ float lane_sum(float v) { return v; }
__device__ __forceinline__ float lane_sum(float4 v) { return (v.x + v.y) + (v.z + v.w); }

template <int VEC, int UNROLL, bool TL>
__device__ __forceinline__ void stream_read_body(const float* __restrict__ src, long long n_vec,
                                                 float* __restrict__ partial) {
    BlockStamp<TL> stamp;
    using V = typename vec_of<VEC>::type;
    __shared__ float shm[32];
    const V* __restrict__ p = reinterpret_cast<const V*>(src);
    const long long stride = (long long)gridDim.x * blockDim.x;
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    float acc = 0.0f;
    // `unroll 1`: the compiler must not unroll this loop further on its own (it otherwise batches four
    // iterations' loads), so UNROLL really is the number of loads a thread has in flight.
#pragma unroll 1
    for (; i + (UNROLL - 1) * stride < n_vec; i += UNROLL * stride) {
        V v[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) v[u] = p[i + u * stride];   // UNROLL loads issued back to back
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) acc += lane_sum(v[u]);
    }
#pragma unroll 1
    for (; i < n_vec; i += stride) acc += lane_sum(p[i]);            // the remainder, one at a time
    const float total = block_sum(acc, shm);
    if (threadIdx.x == 0) partial[blockIdx.x] = total;
    stamp.stop();
}

template <int VEC, int UNROLL>
__global__ void stream_read(const float* __restrict__ src, long long n_vec, float* __restrict__ partial) {
    stream_read_body<VEC, UNROLL, false>(src, n_vec, partial);
}

template <int VEC, int UNROLL>
__global__ void __launch_bounds__(1024, 2) stream_read_timeline(const float* __restrict__ src, long long n_vec,
                                                                float* __restrict__ partial) {
    stream_read_body<VEC, UNROLL, true>(src, n_vec, partial);
}

template __global__ void stream_read<1, 1>(const float*, long long, float*);
template __global__ void stream_read<4, 1>(const float*, long long, float*);
template __global__ void stream_read<1, 4>(const float*, long long, float*);
template __global__ void stream_read<4, 4>(const float*, long long, float*);
template __global__ void stream_read_timeline<4, 4>(const float*, long long, float*);
