// The occupancy probe: one kernel body instantiated at many register caps (__maxnreg__) and static shared
// memory sizes, so that the driver's occupancy answer can be read for thousands of (registers, shared
// memory, block) configurations and compared with launchlab.occupancy's arithmetic.
//
// The body keeps NV values live at once, so the register count follows the cap (the compiler spills past
// it); what the kernel computes does not depend on the cap, so every instantiation must produce the same
// bytes (the recorder checks that, and checks the result against occupancy.probe_reference in numpy).
#define NV 200

template <int MAXREG, int STATIC_SMEM>
__global__ void __maxnreg__(MAXREG) occupancy_probe(const float* __restrict__ in, float* __restrict__ out, int n) {
    const int tid = blockIdx.x * blockDim.x + threadIdx.x;
    const bool active = tid < n;         // no early return: the static-smem variants reach a barrier
    const int t = active ? tid : 0;
    float v[NV];
#pragma unroll
    for (int j = 0; j < NV; ++j) v[j] = in[(j * 131 + t) % n];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
#pragma unroll
        for (int j = 0; j < NV; ++j) v[j] = fmaf(v[j], 0.5f, v[(j + 1) % NV] * 0.25f);
    }
    float acc = 0.0f;
#pragma unroll
    for (int j = 0; j < NV; ++j) acc += v[j];
    if constexpr (STATIC_SMEM > 0) {
        // Static shared memory that is really allocated and used, without changing the result: the first
        // STATIC_SMEM/4 threads round-trip their value through it.
        __shared__ float stage[STATIC_SMEM / 4];
        if (threadIdx.x < STATIC_SMEM / 4) stage[threadIdx.x] = acc;
        __syncthreads();
        if (threadIdx.x < STATIC_SMEM / 4) acc = *((volatile float*)&stage[threadIdx.x]);
    }
    if (active) out[tid] = acc;
}
