// A GPU-side wait used by the timing instruments: queued before a timed region so that the start event is
// recorded behind GPU work, and the host's launch overhead for the timed kernel lands outside the window.
// Thread 0 spins on the global nanosecond timer for `ns` and writes how long it actually waited.
extern "C" __global__ void spin_wait(long long ns, long long* __restrict__ waited) {
    if (threadIdx.x != 0 || blockIdx.x != 0) return;
    long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    } while (t - t0 < ns);
    *waited = t - t0;
}
