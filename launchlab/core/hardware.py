"""The GPU's launch limits: what the occupancy arithmetic and the launch checks need.

Live mode reads them from the device (cudaGetDeviceProperties through CuPy). Replay mode reads them from
the recording's provenance, which the recorder took from the same call on the H200. `H200` below is the
datasheet-free constant for the part the course was recorded on; tests check it against the recording.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace


@dataclass(frozen=True)
class GPUSpec:
    name: str
    sm_count: int
    compute_capability: tuple[int, int]
    warp_size: int = 32
    max_threads_per_block: int = 1024
    max_block_dims: tuple[int, int, int] = (1024, 1024, 64)
    max_grid_dims: tuple[int, int, int] = (2**31 - 1, 65535, 65535)
    max_threads_per_sm: int = 2048
    max_blocks_per_sm: int = 32
    regs_per_sm: int = 65536
    regs_per_block: int = 65536
    smem_per_sm: int = 233472            # 228 KiB
    smem_per_block: int = 49152          # 48 KiB without opt-in
    smem_per_block_optin: int = 232448   # 227 KiB with cudaFuncAttributeMaxDynamicSharedMemorySize
    reserved_smem_per_block: int = 1024  # the runtime's own 1 KiB per block (sm_80 and later)
    l2_bytes: int = 0

    @property
    def max_warps_per_sm(self) -> int:
        return self.max_threads_per_sm // self.warp_size

    def to_dict(self) -> dict:
        d = asdict(self)
        for k in ("compute_capability", "max_block_dims", "max_grid_dims"):
            d[k] = list(d[k])
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "GPUSpec":
        known = {f.name for f in fields(cls)}
        kw = {k: v for k, v in d.items() if k in known}
        for k in ("compute_capability", "max_block_dims", "max_grid_dims"):
            if k in kw:
                kw[k] = tuple(kw[k])
        return cls(**kw)


# NVIDIA H200 SXM (sm_90). These match cudaGetDeviceProperties on the course's H200 (tests/test_hardware.py
# compares them with the recorded properties).
H200 = GPUSpec(name="NVIDIA H200", sm_count=132, compute_capability=(9, 0), l2_bytes=62914560)

# Each architecture's per-SM limits as NVIDIA publishes them: the CUDA C++ Programming Guide's "Technical
# Specifications per Compute Capability", whose machine-readable copy is CCCL's cuda/__device/arch_traits.h
# (tests/test_archs.py reads that header from NVIDIA's nvidia-cuda-cccl wheel and compares, field by field).
# compute capability -> (threads per SM, blocks per SM, shared memory per SM in KiB); every one of them also has
# 64 Ki registers per SM and per block and 1024 threads per block. From sm_80 on the runtime reserves 1 KiB of
# shared memory per block (RESERVED_FROM); before it, none. The opt-in block limit is the SM's shared memory
# less that reserve.
ARCH_LIMITS: dict[tuple[int, int], tuple[int, int, int]] = {
    (7, 0): (2048, 32, 96),      # V100
    (7, 5): (1024, 16, 64),      # T4 (Colab's GPU), RTX 20
    (8, 0): (2048, 32, 164),     # A100
    (8, 6): (1536, 16, 100),     # RTX 30, A40, A10
    (8, 9): (1536, 24, 100),     # L4, L40, RTX 40
    (9, 0): (2048, 32, 228),     # H100, H200
    (10, 0): (2048, 32, 228),    # B200
    (12, 0): (1536, 24, 100),    # RTX 50, RTX PRO Blackwell (CCCL 13.3's header: 24 blocks; earlier ones said 32)
}
RESERVED_FROM, RESERVED_SMEM = (8, 0), 1024
ARCHS = {f"sm_{a}{b}": (a, b) for a, b in ARCH_LIMITS}         # the calculator knows each; archs builds for each


def for_arch(name: str, sm_count: int, compute_capability: tuple[int, int], l2_bytes: int = 0) -> GPUSpec:
    """A GPU of `sm_count` SMs with its architecture's published limits (ARCH_LIMITS)."""
    cc = tuple(compute_capability)
    try:
        threads, blocks, smem_kib = ARCH_LIMITS[cc]
    except KeyError:
        known = ", ".join(f"{a}.{b}" for a, b in ARCH_LIMITS)
        raise ValueError(f"no published limits here for compute capability {compute_capability}; known: {known}") \
            from None
    reserved = RESERVED_SMEM if cc >= RESERVED_FROM else 0
    return GPUSpec(name=name, sm_count=sm_count, compute_capability=cc,
                   max_threads_per_sm=threads, max_blocks_per_sm=blocks, smem_per_sm=smem_kib * 1024,
                   smem_per_block_optin=smem_kib * 1024 - reserved, reserved_smem_per_block=reserved,
                   l2_bytes=l2_bytes)


# The GPUs learners have (issue 29): an SM count is the product's, the limits are its architecture's.
LEARNER_GPUS = {
    "A100": for_arch("NVIDIA A100", 108, (8, 0)),
    "H100 PCIe": for_arch("NVIDIA H100 PCIe", 114, (9, 0)),
    "L4": for_arch("NVIDIA L4", 58, (8, 9)),
    "RTX 4090": for_arch("NVIDIA GeForce RTX 4090", 128, (8, 9)),
    "B200": for_arch("NVIDIA B200", 148, (10, 0)),
}

KNOWN = {"H200": H200, **LEARNER_GPUS}


# The green slices entered now, innermost last: (its SMs, the whole device's SMs). launchlab.core.slices pushes
# and pops them; spec("H200") and from_device() read the innermost.
_slices: list[tuple[int, int]] = []


def _known(name: str) -> GPUSpec:
    try:
        return KNOWN[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown GPU {name!r}; known: {sorted(KNOWN)}, or pass a GPUSpec") from None


def spec(gpu: "str | GPUSpec" = "H200") -> GPUSpec:
    """A GPUSpec by name ('H200'), or the spec itself. Inside a slice of N of the H200's SMs
    (launchlab.core.slices) the name 'H200' -- every calculator's default -- is the H200 cut to N SMs, so the
    occupancy calculator, the waves, the geometry and the audit's blocks / SMs read N there; a GPUSpec passed
    explicitly is used as given."""
    if isinstance(gpu, GPUSpec):
        return gpu
    s = _known(gpu)
    if gpu == "H200" and _slices and _slices[-1][1] == H200.sm_count:
        return sliced(H200, _slices[-1][0])
    return s


def sliced(gpu: "str | GPUSpec", sms: int) -> GPUSpec:
    """The GPU cut to `sms` of its SMs (a green context, launchlab.core.slices): every per-SM limit unchanged."""
    s = gpu if isinstance(gpu, GPUSpec) else _known(gpu)
    if not 0 < sms <= s.sm_count:
        raise ValueError(f"a slice of {s.name} holds 1 to {s.sm_count} SMs, not {sms}")
    return s if sms == s.sm_count else replace(s, sm_count=sms)


def from_device(device_id: int = 0) -> GPUSpec:
    """Read the spec off a live device (needs CuPy and a GPU). Inside a slice of N SMs (launchlab.core.slices)
    the device is N SMs: every calculator, wave count and geometry that reads the spec reads N."""
    spec = _properties(device_id)
    return replace(spec, sm_count=_slices[-1][0]) if _slices else spec


def _properties(device_id: int) -> GPUSpec:
    import cupy

    p = cupy.cuda.runtime.getDeviceProperties(device_id)
    name = p["name"].decode() if isinstance(p["name"], bytes) else str(p["name"])
    return GPUSpec(
        name=name,
        sm_count=int(p["multiProcessorCount"]),
        compute_capability=(int(p["major"]), int(p["minor"])),
        warp_size=int(p["warpSize"]),
        max_threads_per_block=int(p["maxThreadsPerBlock"]),
        max_block_dims=tuple(int(x) for x in p["maxThreadsDim"]),
        max_grid_dims=tuple(int(x) for x in p["maxGridSize"]),
        max_threads_per_sm=int(p["maxThreadsPerMultiProcessor"]),
        max_blocks_per_sm=int(p["maxBlocksPerMultiProcessor"]),
        regs_per_sm=int(p["regsPerMultiprocessor"]),
        regs_per_block=int(p["regsPerBlock"]),
        smem_per_sm=int(p["sharedMemPerMultiprocessor"]),
        smem_per_block=int(p["sharedMemPerBlock"]),
        smem_per_block_optin=int(p["sharedMemPerBlockOptin"]),
        reserved_smem_per_block=int(p.get("reservedSharedMemPerBlock", 1024)),
        l2_bytes=int(p["l2CacheSize"]),
    )
