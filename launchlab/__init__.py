"""launchlab: the course's instruments for launch geometry on real CUDA kernels.

One idea per module, named in the lecture's vocabulary, in three tiers. A module imports only from its own
tier or the tiers above it in this list, never from a tier below; there is no import cycle
(tests/test_architecture.py checks both, and that every module is listed here).

core -- the machine and how the course measures it
    mode          live (a CUDA GPU through CuPy) or replay (recordings made on an H200): decided once
    hardware      the GPU's limits (SMs, registers, shared memory), read from the device or the H200 spec
    occupancy     resident blocks per SM, the limiter that binds, blocks per wave, SMs with work
    launch        launch geometry checked before any launch (grid, block, shared memory, alignment)
    pdl           the decode chain's launch path: cuLaunchKernelEx with programmatic dependent launch (gated)
    kernels       the CUDA sources in kernels/: CuPy RawModule live, NVRTC cubin + SASS anywhere; show()
    timing        CUDA events, CUDA-graph timing (hot, and cold over rotated copies), ABBA; every rep kept
    timeline      per-block SM and start/end stamps from inside a kernel; achieved occupancy from them
    profile       Nsight Compute (ncu) run on a child process, its CSV parsed: the cross-check
    sharing       who else is on this GPU (NVML): a MIG slice or other processes, said beside every timing
    gates         LAUNCHLAB_* runtime gates that pick a kernel variant at launch; the restore set
    recordings    recordings with provenance; stale and corrupt ones refuse to load; typed <-> JSON
    provenance    which GPU, driver, CUDA runtime and CuPy made a measurement, and when
    floatbits     float32 arithmetic in numpy bit for bit as the GPU does it (FFMA, warp trees)
    dumps         per-position arrays as raw bytes with a header; cmp compares two dumps byte for byte
    diagnosis     starvation, contention or a real bound, from floor, time and spread
    progress      a progress bar for long live measurements (a line on stderr outside Jupyter)
    reuse         a live measurement kept for the later notebooks of a session on the same GPU (if all matches)
    door          one door per section: measure() live, data() live-or-recorded, recorded()

sections -- one module per lecture idea; each owns a Door with measure(), data(), recorded(), headline()
    instruments     00: the GPU's properties; events vs CUDA graphs on a microsecond kernel
    bandwidth       §1: streaming reads against grid and block; bytes in flight; the copy ceiling
    waves           §1: wave quantization of fixed work per block; the memory-bound ramp
    occupancy_probe §1: the driver's occupancy answers, swept, against the calculator
    achieved        §1/§3: achieved occupancy against grid size from block timelines, beside ncu
    rmsnorm         §2: the single-block RMS norm, widened apply, byte-identity, the widened reduction
    frontier        §2.2: a fixed saving against a moving frontier and a 2% gate
    kda             §3: the KDA decode step, grid = n_head vs value tiles; write elision; contention
    splits          §4: the MLA split count derived from the shape and a named target, beside a pinned floor
    mla             §4/§8: the MLA split-KV decode (tensor cores, bf16) and its combine; float64 reference
    derive          §4: derived vs hardcoded split floor measured (ABBA, S sweep, tp, residency, PyTorch peer)
    reassociation   §8: split counts and bits: same S same bytes, a blind gate, batch invariance, a bounded skip
    fmatrap         §7.1: a * b + c three ways; FFMA vs FMUL + FADD in SASS, -fmad=false in one file; the bytes
    decode          the decode step: 93 layers (MLA / KDA alternating), 327 RMS norms per token, cuBLAS projections
    stepprofile     the decode step's profile: every launch timed inside a CUDA graph, with occupancy
    onebinary       §6: eval, the bench marginal, ABBA of each gate on the decode step, one process, ncu
    identity        §7: two arms of the decode step dumped and compared byte for byte, at several depths
    audit           §5: every launch whose grid derives from a sharded dimension
    lab             the lab: the 8-step audit of the decode step under `main`, its recording, the reference answers
    pdlchain        §2/§6: the chain with and without PDL (327 norms, the step), an opted-out kernel, its gaps
    accuracy        §2.1/§2.2: KL(main || arm) and top-1 per position on the decode step, teacher-forced

face -- what a learner, an instructor or a maintainer touches
    banner        the mode line every notebook prints first
    plots         the course's figures; one convention for the chosen point
    widgets       the explorers, on one scaffold
    exercises     answer cells checked with an explanation: one convention for notebooks, lab and self-check
    badinputs     bad inputs across the API, each refused with the fix named, the session working after
    reliability   the reliability sweep's figures from its reports (the JupyterHub test, ...)
    summary       every section's headline figures from the recordings (`summary --json`)
    grading       the lab graded with otter-grader: the learner copy from the master, `grade DIR` into a CSV
    recorder      every door measured on a GPU into data/recordings/
    selftest      every kernel against its numpy reference, as named checks
    bench         ratios measured side by side in one run
    environment   what this machine has (notebook 00's check)
    course        every notebook executed headless into HTML
    __main__      the command line (`python -m launchlab --help`)
"""
__version__ = "0.1.0"

LAYERS = {
    "core": ("mode", "hardware", "occupancy", "launch", "pdl", "kernels", "timing", "timeline", "profile", "sharing", "gates",
             "recordings", "provenance", "floatbits", "dumps", "diagnosis", "progress", "reuse", "door"),
    "sections": ("instruments", "bandwidth", "waves", "occupancy_probe", "achieved", "rmsnorm", "frontier", "kda",
                 "splits", "mla", "derive", "reassociation", "fmatrap", "decode", "stepprofile", "onebinary", "identity", "audit",
                 "lab", "pdlchain", "accuracy"),
    "face": ("banner", "plots", "widgets", "exercises", "grading", "badinputs", "reliability", "summary", "recorder", "selftest", "bench", "environment",
             "course", "__main__"),
}
