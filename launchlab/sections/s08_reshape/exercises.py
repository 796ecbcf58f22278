"""§8's exercises."""
from __future__ import annotations

from launchlab.core.exercise import Exercise, register
from launchlab.kernels import splits
from launchlab.sections.s08_reshape import reassociation

# ------------------------------------------------------------------ §8 when a reshape is not free
register(Exercise(
    "08.gate_sees_it", "can a parity gate that runs at ctx 4,096 see the hardcoded -> derived change? 'yes' or 'no'",
    lambda d: "no" if next(g for g in d.gate if g.ctx == 4096).identical else "yes",
    lambda d: (lambda g4, g1: f"at 4,096 tokens both arms launch {g4.splits_derived} split (no split below "
                              f"{splits.SPLIT_MIN_CTX:,}): {'identical' if g4.identical else 'different'} bytes. At "
                              f"131,072 they launch {g1.splits_hardcoded} and {g1.splits_derived} splits and "
                              f"{g1.n_differ:,} of {d.elements:,} outputs differ. The gate passes either way: it "
                              f"never reaches the split path.")(
        next(g for g in d.gate if g.ctx == 4096), next(g for g in d.gate if g.ctx == 131_072)),
    kind="choice", choices=("yes", "no"),
    recorded=lambda: (reassociation.recorded(),),
    shown_by=(r"4,096:\s+hardcoded\s+1 split\(s\), derived\s+1 -> identical", r"launch the same single split")))

register(Exercise(
    "08.batch_invariant_rule", "which rule gives request 0 the same bits at batch 1 and batch 2: 'derived' (from SMs "
                               "and batch) or 'fixed slice'?",
    lambda d: "fixed slice" if next(b for b in d.batch if b.rule.startswith("fixed")).identical else "derived",
    lambda d: " ".join(f"{b.rule}: {b.splits_batch1} splits at batch 1, {b.splits_batch2} at batch 2, "
                       f"{'identical' if b.identical else f'{b.n_differ:,} outputs differ'}." for b in d.batch),
    kind="choice", choices=("derived", "fixed slice"),
    recorded=lambda: (reassociation.recorded(),),
    shown_by=(r"(identical bytes for|outputs of) request 0", r"so request 0 gets\s+different bits")))
