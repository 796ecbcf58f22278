// Programmatic dependent launch (Hopper, sm_90): the decode chain's kernels and where they wait.
//
// A kernel launched with the programmatic-stream-serialization attribute (launchlab.pdl, the course's
// k3_pdl_launch) may be scheduled while the kernel before it in the stream is still running. Two PTX
// instructions make that safe and useful:
//
//   griddepcontrol.wait              returns once every prerequisite grid has completed and its memory
//                                    operations are visible to this grid. Nothing written by an earlier
//                                    kernel of the chain may be read -- and nothing an earlier kernel still
//                                    reads may be written -- before it.
//   griddepcontrol.launch_dependents this grid no longer holds back the next kernel's launch: its blocks may
//                                    be scheduled and run their own prologue up to their wait.
//
// Every kernel of the chain calls pdl_enter() (wait, then release the successor) in every thread before its
// first access to memory another kernel of the chain writes or reads; what comes before it is only work that
// depends on nothing the chain writes (index math, the launch's own parameters, mla_rope_pack's rotation
// angles). Because each kernel waits for its predecessor's completion, and a kernel completes only after its
// own wait returned, the ordering is transitive down the chain, whichever launches carry the attribute.
//
// Launched without the attribute (LAUNCHLAB_PDL=0, or an opted-out family) both instructions are no-ops: one
// build serves both arms. Releasing the successor right after the wait is safe because the successor's own
// wait still holds it until this grid completes; it costs the successor's blocks a resident slot while they
// wait, which the chain's small grids can spare.
//
// Test-only: compiled with -DLAUNCHLAB_PDL_MISPLACED_WAIT (launchlab.pdl.misplaced_module; never the course's
// build), the RMS norm reads x for its sum of squares BEFORE waiting -- the bug a missing wait is -- and the
// module gains pdl_slow_writer, a predecessor that releases its successor first and writes late. tests/
// test_pdl.py shows the byte compare catching it.
#pragma once

__device__ __forceinline__ void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

__device__ __forceinline__ void pdl_release() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// The point past which a chain kernel touches the chain's memory.
__device__ __forceinline__ void pdl_enter() {
    pdl_wait();
    pdl_release();
}

__device__ __forceinline__ unsigned long long pdl_globaltimer() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}
