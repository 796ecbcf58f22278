"""§7's exercises."""
from __future__ import annotations

from launchlab.core.exercise import Exercise, register
from launchlab.kernels import splits
from launchlab.sections.s07_bit_identity import fmatrap, identity
from launchlab.sections.s07_bit_identity import turn
from launchlab.core import transfer


# ------------------------------------------------------------------ §7 proving bit-identity as bytes
def _identical_at(d, ctx: int) -> str:
    names = {"KDA_VT": "vt", "MLA_FLOOR": "mla floor", "KDA_ELIDE": "fma"}
    same = [names[c.name.split()[0]] for c in d.cases if c.ctx == ctx and c.identical]
    return " and ".join(same) if same else "none"


register(Exercise(
    "07.identical_at_131072", "which arm pairs are byte-identical at ctx 131,072: 'vt', 'vt and mla floor', or 'none'",
    lambda d: _identical_at(d, 131_072) if _identical_at(d, 131_072) in ("vt", "vt and mla floor") else "none",
    lambda d: (lambda vt, ml: f"KDA_VT 0 vs 1 at 131,072: {'IDENTICAL' if vt.identical else 'different'} over "
                              f"{vt.elements:,} elements (every layer, {len(vt.steps)} positions). The MLA floor: "
                              f"{ml.differing:,} elements differ, the first at {ml.first[1] if ml.first else '-'} "
                              f"-- layer 0 is an MLA layer, and {splits.split(ml.ctx + 1, 16, 1, 'hardcoded').splits} "
                              f"splits against {splits.split(ml.ctx + 1, 16, 1, 'derived').splits} reassociate its "
                              f"combine. (The fma arm, dumped at 2,048, differs from its first KDA layer on.)")(
        d.case("KDA_VT 0 vs 1", 131_072), d.case("MLA_FLOOR hardcoded vs derived", 131_072)),
    kind="choice", choices=("vt", "vt and mla floor", "none"),
    hint="for each gate, does the arm change a launch at 131,072 tokens? A gate that changes how many splits add up a "
         "sum changes the bytes; one that only changes who computes an element may not.",
    recorded=lambda: (identity.recorded(),),
    shown_by=(r"131,072\s.*(IDENTICAL|identical|differ)", r"Identical at every depth from 128 to 131,072")))

register(Exercise(
    "07.fma_fix", "the pass-2 recompute must give main's bytes: which form -- 'tmp' (float tmp = a * b; out = tmp + c), "
                  "'inline' (out = a * b + c) or 'rn' (out = __fmul_rn(a, b) + c)?",
    lambda: next(f.form for f in fmatrap.sass_table() if f.family == "fma_forms" and not f.fused),
    lambda: (lambda t: f"main rounded the product to fp32 (it went through shared memory), then added. Under "
                       f"nvcc's default -fmad=true both 'tmp' and 'inline' compile to {t['tmp'].ffma} FFMA: one "
                       f"rounding, different bytes. Only __fmul_rn forces the rounded product ({t['rn'].fmul} FMUL + "
                       f"{t['rn'].fadd} FADD): the one-token fix. -fmad=false scoped to the file does the same for "
                       f"every form.")({f.form: f for f in fmatrap.sass_table() if f.family == "fma_forms"}),
    kind="choice", choices=("tmp", "inline", "rn"),
    hint="main rounded the product to fp32 before adding; under nvcc's default -fmad=true, which forms can the "
         "compiler fuse into one FFMA (one rounding), and which form forbids it?",
    shown_by=(r"\(the default\)\s+rn\s+0\s+1\s+1", r"__fmul_rn\(a, b\) \+ c` compiles to FMUL \+ FADD",
              r"one-token fix")))


# ------------------------------------------------------------------ the your-turn launch (turn.py)
register(Exercise(
    "07.turn_grid_96", "the smallest grid that gives each of fma_tmp's 2^20 elements a thread at block 96",
    lambda: -(-turn.N // 96),
    lambda: f"{turn.N:,} / 96 = {turn.N / 96:,.2f}, so {-(-turn.N // 96):,} blocks; the last one has "
            f"{-(-turn.N // 96) * 96 - turn.N} threads past the end, which the kernel's `if (i < n)` sends home. "
            f"Every covering grid writes the same bytes: each element's arithmetic does not depend on which "
            f"block or thread does it. One block fewer leaves the last {turn.N - (-(-turn.N // 96) - 1) * 96} "
            f"elements unwritten, and cmp counts exactly those.",
    hint="the grid must cover every element: divide the element count by the block and round up, never down."))


transfer.mark(register(Exercise(
    "07.transfer_grid_3m", "the smallest grid that gives each of 3,000,000 elements a thread of fma_tmp at block 384",
    lambda: -(-3_000_000 // 384),
    lambda: "3,000,000 / 384 = 7,812.5, so 7,813 blocks: the last one has 192 threads past the end, which the "
            "bounds check returns. Any larger grid writes the same bytes.",
    hint="a grid is a whole number of blocks: divide and round up, so the last block covers the remainder.")),
    "3,000,000 elements at block 384")
