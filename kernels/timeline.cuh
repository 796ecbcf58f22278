// Where a launch's blocks ran and when: an optional per-block stamp, compiled in only where asked for.
//
// A kernel that takes `template <..., bool TL = false>` constructs a BlockStamp<TL> on entry and calls
// stop() as its last statement. With TL = false both are empty and the compiler emits nothing: the default
// instantiations are the kernels the course times. With TL = true, thread 0 of every block writes three
// words to launchlab_timeline (set from the host, launchlab.timeline) at the block's linear index b:
//   [3b]     %globaltimer when the block started (ns; its resolution is measured, timeline.resolution)
//   [3b + 1] %globaltimer after the block's last barrier (every warp of it has finished its work)
//   [3b + 2] %smid, the SM the block ran on
// %globaltimer is one clock for the whole GPU, so blocks on different SMs can be laid on one time axis
// (clock64 counts per SM and cannot).
#pragma once

extern "C" {
__device__ unsigned long long* launchlab_timeline;
}

__device__ __forceinline__ unsigned long long globaltimer_ns() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

__device__ __forceinline__ unsigned int sm_id() {
    unsigned int s;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(s));
    return s;
}

template <bool TL>
struct BlockStamp {
    // Nothing is held across the kernel's work (the start stamp goes straight to memory), so the stamped
    // instantiation keeps the register count -- and so the occupancy -- of the one it observes.
    __device__ __forceinline__ static unsigned long long* slot() {     // re-read at each use (volatile): the
        unsigned long long* const volatile* p = &launchlab_timeline;  // pointer is not kept in a register
        return *p + 3 * (blockIdx.x + (unsigned long long)gridDim.x * blockIdx.y);
    }
    __device__ __forceinline__ BlockStamp() {
        if (TL && threadIdx.x == 0 && threadIdx.y == 0) slot()[0] = globaltimer_ns();
    }
    __device__ __forceinline__ void stop() {
        if (TL) {
            __syncthreads();
            if (threadIdx.x == 0 && threadIdx.y == 0) {
                unsigned long long* const s = slot();
                s[1] = globaltimer_ns();
                s[2] = sm_id();
            }
        }
    }
};
