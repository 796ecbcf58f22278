"""launchlab: the course's instruments for launch geometry on real CUDA kernels.

One idea per module, named in the lecture's vocabulary:

    mode         live (a CUDA GPU through CuPy) or replay (recordings made on an H200)
    hardware     the GPU's limits (SMs, registers, shared memory), read from the device or a recording
    occupancy    resident blocks per SM, the limiter that binds, blocks per wave
    launch       launch geometry checked before any launch (grid, block, shared memory)
    kernels      the CUDA sources in kernels/: CuPy RawModule live, NVRTC cubin + SASS anywhere
    timing       CUDA events, CUDA-graph timing, ABBA interleaving; every rep kept
    gates        LAUNCHLAB_* runtime gates that pick a kernel variant at launch; the restore set
    recordings   recordings with provenance; stale and corrupt ones refuse to load
    bandwidth    §1: streaming reads against grid and block size, bytes in flight, the copy ceiling
    waves        §1: wave quantization of fixed work per block
    recorder     runs every measurement the notebooks show and writes the recordings
"""
__version__ = "0.1.0"
