// The block timeline's own instrument check: how finely does %globaltimer tick on this GPU?
//
// One thread reads %globaltimer back to back and records every value that differs from the one before, so
// the gaps are the timer's update interval (plus one read's latency), not the kernel's work. The host takes
// their median as the resolution of every timeline stamp (launchlab.timeline.resolution).
#include "timeline.cuh"

extern "C" __global__ void globaltimer_ticks(unsigned long long* __restrict__ out, int n) {
    if (threadIdx.x != 0 || blockIdx.x != 0) return;
    unsigned long long last = globaltimer_ns();
    out[0] = last;
    for (int k = 1; k < n;) {
        const unsigned long long t = globaltimer_ns();
        if (t != last) {
            out[k++] = t;
            last = t;
        }
    }
}
