"""Step 8 on the launch idioms of two public code bases, written out small enough to read in a notebook cell.

Each snippet keeps the shape of the library's own code, not its text (read 2026-12-05 with the library's `fetch`):
- flash-linear-attention (fla-org/flash-linear-attention, fla/ops/common/chunk_h.py, chunk_fwd_h): an autotuned
  @triton.jit kernel launched with a nested `def grid(meta)` whose second axis is sequences x heads;
- DeepEP (deepseek-ai/DeepEP, csrc/kernels/legacy/launch.cuh and layout.cu): a macro that declares the launch
  config and another that calls cudaLaunchKernelEx, used together in the function that sizes the grid.
"""
from __future__ import annotations

import tempfile
import textwrap
from pathlib import Path

from launchlab.audit import sites

SNIPPETS = {
    "fla_like/chunk_h.py": '''
        import triton

        @triton.autotune(configs=[], key=["H", "K", "V"])
        @triton.jit
        def chunk_fwd_kernel_h(k, v, h, T, H, K, V, BT, BK, BV):
            pass

        def chunk_fwd_h(k, v, chunk_size=64):
            B, T, H, K, V = *k.shape, v.shape[-1]
            N, NT = B, triton.cdiv(T, chunk_size)
            h = k.new_empty(B, NT, H, K, V)
            def grid(meta): return (triton.cdiv(K, meta['BK']), triton.cdiv(V, meta['BV']), N * H)
            chunk_fwd_kernel_h[grid](k, v, h, T, H, K, V, chunk_size)
            return h
        ''',
    "deepep_like/launch.cuh": '''
        #pragma once
        #define SETUP_LAUNCH_CONFIG(num_sms, num_threads, stream) \\
            cudaLaunchConfig_t cfg = {(num_sms), (num_threads), 0, stream, nullptr, 0}
        #define LAUNCH_KERNEL(config, kernel, ...) CUDA_CHECK(cudaLaunchKernelEx(config, kernel, ##__VA_ARGS__))
        ''',
    "deepep_like/layout.cu": '''
        #include "launch.cuh"
        void get_dispatch_layout(const int64_t* topk_idx, int num_tokens, int num_experts, int num_ranks,
                                 cudaStream_t stream) {
            constexpr int kThreads = 256, kExpertsPerSM = 4, kRanksPerSM = 8;
            int num_sms = (num_experts + kExpertsPerSM - 1) / kExpertsPerSM
                        + (num_ranks + kRanksPerSM - 1) / kRanksPerSM;
            SETUP_LAUNCH_CONFIG(num_sms, kThreads, stream);
            LAUNCH_KERNEL(&cfg, dispatch_layout<kThreads>, topk_idx, num_tokens, num_experts);
        }
        ''',
}


def write(folder) -> Path:
    """The snippets as files under `folder` (a tree step 8 reads)."""
    root = Path(folder)
    for rel, text in SNIPPETS.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text).lstrip("\n"))
    return root


def show(dimensions=("H", "expert")) -> str:
    """Step 8 over the snippets, once per sharded dimension, with paths relative to the snippets' folder."""
    with tempfile.TemporaryDirectory() as d:
        root = write(Path(d) / "public_patterns")
        scanned = sites.scan(root)
        out = [sites.report(root, dim, only_hits=True, scanned=scanned).split("\nwhat a static grep")[0]
               .replace(str(root), "public_patterns") for dim in dimensions]
    return "\n".join(out)
