// §2 RMS norm over one row per block: y[d] = x[d] * inv * w[d], inv = rsqrtf(ss / n + eps), ss = sum x^2.
//
// A row needs its whole reduction before any element can be scaled, so one block per row is the right
// structure (a second block would need a global barrier or a second pass). What can change is the width.
//
//   rms_norm_f32             the original: one block of 128 scalar threads does everything.
//   rms_norm_wide<VEC>       the widened apply (lecture §2.1): the sum of squares still runs on exactly
//                            threads 0..127 with the same stride, so ss keeps its float32 association; the
//                            block is sized to the width and the elementwise apply uses all of it, with
//                            float4 loads/stores when VEC (only when n % 4 == 0 and x, w, y are 16-byte
//                            aligned; the host decides). Byte-identical to the original.
//   rms_norm_wide_reduce<VEC> the change the lecture warns against: every thread of the wide block adds to
//                            ss (stride = blockDim.x). Same maths, different association: ss moves by an ulp
//                            now and then, and so may the output.
//
//   ..._chain                the lecture's premise made literal (LAUNCHLAB_RMS_UNROLL=1): the same kernels with
//                            `#pragma unroll 1` on the narrow reduction and the scalar loops, so a thread has one
//                            load of x in flight at a time. ptxas otherwise unrolls the constant-stride loops and
//                            issues many independent loads per thread (kernels.loop_bodies counts them in the
//                            SASS). Unrolling never reorders a float sum, so every chain arm is byte-identical to
//                            its unrolled twin.
//
// Variants are picked at launch by LAUNCHLAB_RMS_WIDE, _REDUCE and _UNROLL (launchlab.gates): one build.
// `stats`, when not null, receives ss and inv per row (for the bit-level checks; the timed runs pass null).
// `stamps`, when not null, receives three %globaltimer readings from block 0 (launchlab.pdlchain's timeline of
// a chain of norms): entered, past the wait, finished (after the block's last store). Null costs one
// predicated branch on a launch parameter.
//
// Every norm is a kernel of the decode chain (kernels/pdl.cuh): it waits for its predecessor before reading x.
#include "common.cuh"
#include "pdl.cuh"

#define REDUCE_THREADS 128

__device__ __forceinline__ void write_stats(float* stats, int row, float ss, float inv) {
    if (stats != nullptr && threadIdx.x == 0) {
        stats[2 * row] = ss;
        stats[2 * row + 1] = inv;
    }
}

__device__ __forceinline__ void stamp(unsigned long long* stamps, int i) {
    if (stamps != nullptr && blockIdx.x == 0 && threadIdx.x == 0) stamps[i] = pdl_globaltimer();
}

// Entered, then past the wait. (The misplaced test build waits later: see pdl.cuh and misplaced_wait().)
__device__ __forceinline__ void enter(unsigned long long* stamps) {
    stamp(stamps, 0);
#ifndef LAUNCHLAB_PDL_MISPLACED_WAIT
    pdl_enter();
#endif
    stamp(stamps, 1);
}

// The test-only bug: the sum of squares has already read x when this waits.
__device__ __forceinline__ void misplaced_wait() {
#ifdef LAUNCHLAB_PDL_MISPLACED_WAIT
    pdl_enter();
#endif
}

__device__ __forceinline__ void finished(unsigned long long* stamps) {
    if (stamps != nullptr) {              // uniform across the block: a launch parameter
        __syncthreads();
        stamp(stamps, 2);
    }
}

// The narrow sum of squares: threads 0..127, stride REDUCE_THREADS, one serial sum per thread. The stride is a
// constant, as in the lecture's kernel, so the compiler may unroll it and keep several loads in flight
// (CHAIN = false) -- or not (CHAIN = true). Either way each thread adds its elements in the same order.
template <bool CHAIN>
__device__ __forceinline__ float sum_squares_narrow(const float* __restrict__ xr, int n) {
    float acc = 0.0f;
    if (CHAIN) {
#pragma unroll 1
        for (int d = threadIdx.x; d < n; d += REDUCE_THREADS) acc += xr[d] * xr[d];
    } else {
        for (int d = threadIdx.x; d < n; d += REDUCE_THREADS) acc += xr[d] * xr[d];
    }
    return acc;
}

// The original: launched with exactly REDUCE_THREADS threads (the host enforces it).
template <bool CHAIN>
__device__ __forceinline__ void rms_original(const float* __restrict__ x, const float* __restrict__ w,
                                             float* __restrict__ y, int n, float eps, float* __restrict__ stats,
                                             unsigned long long* __restrict__ stamps) {
    __shared__ float shm[32];
    const float* xr = x + (long long)blockIdx.x * n;
    float* yr = y + (long long)blockIdx.x * n;
    enter(stamps);
    const float ss = block_sum(sum_squares_narrow<CHAIN>(xr, n), shm);
    misplaced_wait();
    const float inv = rsqrtf(ss / (float)n + eps);
    write_stats(stats, blockIdx.x, ss, inv);
    if (CHAIN) {
#pragma unroll 1
        for (int d = threadIdx.x; d < n; d += REDUCE_THREADS) yr[d] = xr[d] * inv * w[d];
    } else {
        for (int d = threadIdx.x; d < n; d += REDUCE_THREADS) yr[d] = xr[d] * inv * w[d];
    }
    finished(stamps);
}

extern "C" __global__ void rms_norm_f32(const float* __restrict__ x, const float* __restrict__ w,
                                        float* __restrict__ y, int n, float eps, float* __restrict__ stats,
                                        unsigned long long* __restrict__ stamps) {
    rms_original<false>(x, w, y, n, eps, stats, stamps);
}

extern "C" __global__ void rms_norm_f32_chain(const float* __restrict__ x, const float* __restrict__ w,
                                              float* __restrict__ y, int n, float eps, float* __restrict__ stats,
                                              unsigned long long* __restrict__ stamps) {
    rms_original<true>(x, w, y, n, eps, stats, stamps);
}

template <bool VEC>
__device__ __forceinline__ void apply_wide(const float* __restrict__ xr, const float* __restrict__ w,
                                           float* __restrict__ yr, int n, float inv) {
    if (VEC) {
        const float4* x4 = reinterpret_cast<const float4*>(xr);
        const float4* w4 = reinterpret_cast<const float4*>(w);
        float4* y4 = reinterpret_cast<float4*>(yr);
        for (int d = threadIdx.x; d < n / 4; d += blockDim.x) {
            const float4 a = x4[d], b = w4[d];
            float4 o;
            o.x = a.x * inv * b.x;   // the same two roundings per element as the original
            o.y = a.y * inv * b.y;
            o.z = a.z * inv * b.z;
            o.w = a.w * inv * b.w;
            y4[d] = o;
        }
    } else {
        for (int d = threadIdx.x; d < n; d += blockDim.x) yr[d] = xr[d] * inv * w[d];
    }
}

template <bool VEC, bool CHAIN>
__device__ __forceinline__ void rms_wide(const float* __restrict__ x, const float* __restrict__ w,
                                         float* __restrict__ y, int n, float eps, float* __restrict__ stats,
                                         unsigned long long* __restrict__ stamps) {
    __shared__ float shm[32];
    const float* xr = x + (long long)blockIdx.x * n;
    float* yr = y + (long long)blockIdx.x * n;
    enter(stamps);
    float acc = 0.0f;
    if (threadIdx.x < REDUCE_THREADS) acc = sum_squares_narrow<CHAIN>(xr, n);   // the REDUCTION stays narrow
    const float ss = block_sum(acc, shm);                   // threads >= 128 add +0.0f: an IEEE identity
    misplaced_wait();
    const float inv = rsqrtf(ss / (float)n + eps);
    write_stats(stats, blockIdx.x, ss, inv);
    apply_wide<VEC>(xr, w, yr, n, inv);                     // the APPLY goes wide
    finished(stamps);
}

template <bool VEC>
__global__ void rms_norm_wide(const float* __restrict__ x, const float* __restrict__ w,
                              float* __restrict__ y, int n, float eps, float* __restrict__ stats,
                              unsigned long long* __restrict__ stamps) {
    rms_wide<VEC, false>(x, w, y, n, eps, stats, stamps);
}

template <bool VEC>
__global__ void rms_norm_wide_chain(const float* __restrict__ x, const float* __restrict__ w,
                                    float* __restrict__ y, int n, float eps, float* __restrict__ stats,
                                    unsigned long long* __restrict__ stamps) {
    rms_wide<VEC, true>(x, w, y, n, eps, stats, stamps);
}

template <bool VEC>
__global__ void rms_norm_wide_reduce(const float* __restrict__ x, const float* __restrict__ w,
                                     float* __restrict__ y, int n, float eps, float* __restrict__ stats,
                                     unsigned long long* __restrict__ stamps) {
    __shared__ float shm[32];
    const float* xr = x + (long long)blockIdx.x * n;
    float* yr = y + (long long)blockIdx.x * n;
    enter(stamps);
    float acc = 0.0f;
    for (int d = threadIdx.x; d < n; d += blockDim.x) acc += xr[d] * xr[d];   // every thread: reassociated
    const float ss = block_sum(acc, shm);
    misplaced_wait();
    const float inv = rsqrtf(ss / (float)n + eps);
    write_stats(stats, blockIdx.x, ss, inv);
    apply_wide<VEC>(xr, w, yr, n, inv);
    finished(stamps);
}

template __global__ void rms_norm_wide<false>(const float*, const float*, float*, int, float, float*,
                                              unsigned long long*);
template __global__ void rms_norm_wide<true>(const float*, const float*, float*, int, float, float*,
                                             unsigned long long*);
template __global__ void rms_norm_wide_reduce<false>(const float*, const float*, float*, int, float, float*,
                                                     unsigned long long*);
template __global__ void rms_norm_wide_reduce<true>(const float*, const float*, float*, int, float, float*,
                                                    unsigned long long*);
template __global__ void rms_norm_wide_chain<false>(const float*, const float*, float*, int, float, float*,
                                                    unsigned long long*);
template __global__ void rms_norm_wide_chain<true>(const float*, const float*, float*, int, float, float*,
                                                   unsigned long long*);

#ifdef LAUNCHLAB_PDL_MISPLACED_WAIT
// Test-only (pdl.cuh): a predecessor that releases its successor at once, then spins for `spin_ns` and only
// then writes x -- so a successor that reads x before its wait reads the old x.
extern "C" __global__ void pdl_slow_writer(float* __restrict__ x, const float* __restrict__ src, int n,
                                           unsigned long long spin_ns) {
    pdl_enter();
    const unsigned long long t0 = pdl_globaltimer();
    while (pdl_globaltimer() - t0 < spin_ns) {
    }
    for (int d = blockIdx.x * blockDim.x + threadIdx.x; d < n; d += gridDim.x * blockDim.x) x[d] = src[d];
}
#endif
