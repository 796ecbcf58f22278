// The lab's steps 6-7 (launchlab.kernels.residual_add): the decode step's residual add, h += a over the
// hidden width, with the geometry a learner plans. main's add_inplace (decode_ops.cu) is one element per
// thread in blocks of 256 -- 28 blocks for a 7,168-wide row, a fifth of the H200's 132 SMs.
//
//   add_inplace_ept   each thread adds `ept` consecutive elements, starting at
//                     (blockIdx.x * blockDim.x + threadIdx.x) * ept
//
// The guard is per thread and only on the first element (i0 < n): a plan whose `ept` does not divide n, or
// whose grid is larger than it needs with such an ept, makes the last thread write past the end, and a grid
// too small leaves elements unadded. The course's launch path (residual_add.check) refuses both before any
// launch; the grader launches a plan raw between guard words to count what it would do.
//
// A chain kernel (pdl.cuh): it computes its index, then waits for its predecessor before touching h or a.
#include "pdl.cuh"

extern "C" __global__ void add_inplace_ept(float* __restrict__ h, const float* __restrict__ a, int n, int ept) {
    const long long i0 = ((long long)blockIdx.x * blockDim.x + threadIdx.x) * ept;
    pdl_enter();
    if (i0 < n)
        for (int k = 0; k < ept; ++k) h[i0 + k] = h[i0 + k] + a[i0 + k];
}
