"""§8's exercises."""
from __future__ import annotations

from launchlab.core.exercise import Exercise, register
from launchlab.kernels import splits
from launchlab.sections.s08_reshape import reassociation
from launchlab.sections.s04_derive import turn as mla_turn
from launchlab.core import transfer

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
    hint="how many splits do the two rules launch at 4,096 tokens? A gate can only see a change on a path it runs.",
    recorded=lambda: (reassociation.recorded(),),
    shown_by=(r"4,096:\s+hardcoded\s+1 split\(s\), derived\s+1 -> identical", r"launch the same single split")))

register(Exercise(
    "08.batch_invariant_rule", "which rule gives request 0 the same bits at batch 1 and batch 2: 'derived' (from SMs "
                               "and batch) or 'fixed slice'?",
    lambda d: "fixed slice" if next(b for b in d.batch if b.rule.startswith("fixed")).identical else "derived",
    lambda d: " ".join(f"{b.rule}: {b.splits_batch1} splits at batch 1, {b.splits_batch2} at batch 2, "
                       f"{'identical' if b.identical else f'{b.n_differ:,} outputs differ'}." for b in d.batch),
    kind="choice", choices=("derived", "fixed slice"),
    hint="request 0's sum is grouped by its split count: which rule gives it the same split count at batch 1 and "
         "batch 2?",
    recorded=lambda: (reassociation.recorded(),),
    shown_by=(r"(identical bytes for|outputs of) request 0", r"so request 0 gets\s+different bits")))


# ------------------------------------------------------------------ the your-turn launch (turn.py)
def _differing(splits_: int) -> int:
    s, _, _ = mla_turn.TURN.check((splits_, 1, 1), 128)
    return mla_turn.recorded().at(s).compare.differing


register(Exercise(
    "08.turn_differing_66", "how many of the 8,192 outputs of the MLA decode at 66 splits differ in their bytes "
                            "from the decode at 256 splits, on the H200",
    lambda: _differing(66),
    lambda: f"cmp on the H200: {_differing(66):,} of 8,192 values differ at 66 splits ({_differing(128):,} at 128, "
            f"{_differing(1024):,} at 1,024). Each split count adds the same terms in a different grouping, and "
            f"float addition is not associative: a handful of values land on the same float by chance, the rest "
            f"move by an ulp or more.",
    hint="launch at 66 splits in the cell above: its comparison with the decode at 256 splits counts the outputs "
         "whose bytes differ."))


transfer.mark(register(Exercise(
    "08.transfer_splits_50k", "the splits the planner makes when 396 are asked for a 50,000-token context",
    lambda: splits.forced(50_000, 16, 1, splits=396).splits,
    lambda: (lambda sp: f"slice = ceil(50,000 / 396) = {sp.slice_tokens} tokens, and ceil(50,000 / "
                        f"{sp.slice_tokens}) = {sp.splits} slices: asking for a count is asking for a slice size, "
                        f"and the count follows from it -- one more reason two batch sizes can end up summing in "
                        f"different groupings.")(splits.forced(50_000, 16, 1, splits=396)),
    hint="asking for a count is asking for a slice: the slice is the context over the count, rounded up; the "
         "splits are then the context over the slice, rounded up.")), "a 50,000-token context")
