"""§7: proving bit-identity as bytes, on the decode step -- dumps of two arms compared with `cmp`.

For each case two models are built from the same seed (so the same weights, caches and states), one arm's
gates are set, `positions` tokens are decoded from ctx with the logits (and the residual stream after chosen
layers) dumped, and the two dumps are compared byte for byte. Beside the bytes, the largest relative logit
difference: the number a tolerance test would look at, small for every arm whether or not the bytes agree.

The section07 recording holds §7's table at full depth (VT 0 vs 1 at eight depths, the MLA floor below and
above SPLIT_MIN_CTX, the fma elision), the KDA kernel's numeric test against float64 for every arm (the
lecture's 1e-6 tolerance test, which every arm passes), and the FMA forms' bytes on the GPU.
"""
from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from launchlab.core.width import fit
from launchlab.core import dumps, floatbits, gates, mode, recordings
from launchlab.core.door import Door
from launchlab.kernels import decode, splits
from launchlab.sections.s03_starvation import kda
from launchlab.sections.s07_bit_identity import fmatrap
from launchlab.kernels import fma_forms

VT_DEPTHS = (128, 256, 512, 1024, 2048, 4096, 8192, 131_072)
MLA_DEPTHS = (4096, 131_072)          # below and above splits.SPLIT_MIN_CTX
FMA_CTX = 2048
TOLERANCE = 1e-6


@dataclass
class Case:
    name: str                  # "KDA_VT 0 vs 1", ...
    ctx: int
    arm_a: dict
    arm_b: dict
    identical: bool
    differing: int
    elements: int
    first: list | None         # [position, array, element] of the first difference
    per_array: dict            # array -> elements that differ ("kda_out.L1", "hidden.L2", "logits", ...)
    max_rel_logit_diff: float  # at the first position (both arms decode the same token there)
    sha_a: str
    sha_b: str
    steps: list                # per position: [position, max |logit a - b| / max |logit a|, token a, token b]
    per_position: dict = field(default_factory=dict)   # "position" -> {array: elements differing} (nonzero only)

    @property
    def tokens_agree(self) -> bool:
        """Greedy decoding picked the same token at every position in both arms."""
        return all(ta == tb for _, _, ta, tb in self.steps)

    @property
    def logits_identical(self) -> bool:
        return self.per_array.get("logits", 0) == 0


def _arm_dump(m: "decode.Model", arm: dict, positions: int, layers: tuple[int, ...], path: Path):
    with gates.setting(**arm):
        m.dump(path, list(range(m.ctx, m.ctx + positions)), layers)
    return dumps.load(path)


def compare(name: str, ctx: int, arm_a: dict, arm_b: dict, cfg: "decode.Config | None" = None,
            positions: int = 4, layers: tuple[int, ...] | None = None) -> Case:
    """Two arms from the same build (the second restored to the state the build left: Model.save / restore),
    dumped (`layers`: every layer unless given) and compared byte for byte."""
    mode.require_live("dumping the decode step")
    import cupy as cp
    cfg = cfg or decode.Config()
    layers = tuple(range(cfg.layers)) if layers is None else layers
    m = decode.build(cfg, ctx=ctx, extra=positions)
    fresh = m.save()
    with tempfile.TemporaryDirectory() as d:
        da = _arm_dump(m, arm_a, positions, layers, Path(d) / "a.dump")
        m.restore(fresh)
        db = _arm_dump(m, arm_b, positions, layers, Path(d) / "b.dump")
        del m, fresh
        cp.get_default_memory_pool().free_all_blocks()
        c = dumps.cmp(da, db)
        per_pos = {}
        if not c.identical:
            for i, p in enumerate(da.positions):
                n = {sp.name: int(np.sum(da.array(i, sp.name).view(np.uint32) != db.array(i, sp.name).view(np.uint32)))
                     for sp in da.specs}
                per_pos[str(int(p))] = {k: v for k, v in n.items() if v}
        la = np.stack([da.array(i, "logits") for i in range(positions)]).astype(np.float64)
        lb = np.stack([db.array(i, "logits") for i in range(positions)]).astype(np.float64)
    rel = np.max(np.abs(la - lb), axis=1) / np.max(np.abs(la), axis=1)
    steps = [[int(p), float(r), int(np.argmax(x)), int(np.argmax(y))]
             for p, r, x, y in zip(da.positions, rel, la, lb)]
    return Case(name, ctx, arm_a, arm_b, c.identical, c.differing, c.elements,
                list(c.first) if c.first else None, dict(c.per_array), float(rel[0]), *c.fingerprints, steps,
                per_pos)


def cases(cfg: "decode.Config | None" = None, positions: int = 4, depths=VT_DEPTHS) -> list[Case]:
    """§7's table: VT = 0 vs 1 at every depth; the MLA floor below and above SPLIT_MIN_CTX; the fma elision."""
    cfg = cfg or decode.Config()
    layers = tuple(range(cfg.layers))               # every layer: cmp names the first one that differs
    out = [compare("KDA_VT 0 vs 1", ctx, {"KDA_VT": "0"}, {"KDA_VT": "1"}, cfg, positions, layers) for ctx in depths]
    for ctx in MLA_DEPTHS:
        out.append(compare("MLA_FLOOR hardcoded vs derived", ctx, {"MLA_FLOOR": "hardcoded"},
                           {"MLA_FLOOR": "derived"}, cfg, positions, layers))
    out.append(compare("KDA_ELIDE rn vs fma", FMA_CTX, {"KDA_ELIDE": "rn"}, {"KDA_ELIDE": "fma"}, cfg, positions,
                       layers))
    return out


@dataclass
class FormBytes:
    """One FMA form's output on the GPU against the bytes its SASS predicts (launchlab.sections.s07_bit_identity.fmatrap)."""
    family: str
    form: str
    ffma: int
    fmul: int
    fadd: int
    matches_prediction: bool
    differ_from_two_roundings: int     # elements whose bytes differ from (a*b rounded) + c rounded
    elements: int
    rel_err_vs_f64: float              # max |out - a*b+c in float64| / max |a*b+c|: what a tolerance test reads


def fma_bytes(n: int = 1 << 16, seed: int = 4) -> list[FormBytes]:
    a, b, c = fma_forms.inputs(n, seed)
    two = floatbits.bits(fma_forms.separate(a, b, c))
    ref = a.astype(np.float64) * b + c
    out = []
    for f in fmatrap.sass_table():
        got = fmatrap.run(f, a, b, c)
        bits = floatbits.bits(got)
        out.append(FormBytes(f.family, f.form, f.ffma, f.fmul, f.fadd,
                             bool(np.array_equal(bits, floatbits.bits(fmatrap.expected(f, a, b, c)))),
                             int(np.sum(bits != two)), n,
                             float(np.max(np.abs(got.astype(np.float64) - ref)) / np.max(np.abs(ref)))))
    return out


@dataclass
class IdentityData:
    layers: int
    positions: int
    cases: list[Case]
    kda_numeric: dict                  # variant -> {identical_to_baseline, rel_err_o, rel_err_state}
    forms: list[FormBytes] = field(default_factory=list)
    source: str = field(default="", metadata={recordings.RECORDED: False})

    def case(self, name: str, ctx: int) -> Case:
        return next(c for c in self.cases if c.name == name and c.ctx == ctx)

    def vt(self) -> list[Case]:
        return [c for c in self.cases if c.name.startswith("KDA_VT")]

    def mla(self) -> list[Case]:
        return [c for c in self.cases if c.name.startswith("MLA_FLOOR")]

    def fma(self) -> Case:
        return next(c for c in self.cases if c.name.startswith("KDA_ELIDE"))

    def tolerance_passes(self) -> dict[str, bool]:
        """The lecture's numeric test per KDA arm: out and state within 1e-6 of float64 (relative to max)."""
        return {k: v["rel_err_o"] <= TOLERANCE and v["rel_err_state"] <= TOLERANCE
                for k, v in self.kda_numeric.items()}

    def mla_identical_below_min_ctx(self) -> bool:
        below = [c for c in self.mla() if c.ctx <= splits.SPLIT_MIN_CTX]
        above = [c for c in self.mla() if c.ctx > splits.SPLIT_MIN_CTX]
        return bool(below) and all(c.identical for c in below) and bool(above) and not any(c.identical for c in above)


def measure(layers: int = decode.FULL_LAYERS, positions: int = 4, depths=VT_DEPTHS) -> IdentityData:
    mode.require_live("measuring §7 on the decode step")
    cfg = decode.Config(layers=layers)
    cs = cases(cfg, positions, depths)
    num = kda.compare(12)
    kn = {k: {"identical_to_baseline": v.identical_to_baseline, "rel_err_o": v.rel_err_o,
              "rel_err_state": v.rel_err_state} for k, v in num.variants.items()}
    return IdentityData(layers, positions, cs, kn, fma_bytes(), source="live")


_parse, _dump = recordings.codec(IdentityData, "identity", "section07")


DOOR: Door[IdentityData] = Door("bit-identity as bytes (§7)", "section07",
                                ("decode_ops", "rms_norm", "kda_decode", "mla_decode", "fma_forms",
                                 "fma_forms_strict"), measure, _parse, _dump, quick={"positions": 2})
data = DOOR.data
recorded = DOOR.recorded


# ------------------------------------------------------------------ what the notebook prints
def table(d: IdentityData) -> str:
    out = [f"{'arms':<30} {'ctx':>7}  {'cmp: elements':<18} {'first difference':<26} {'tokens':<6} {'logits*':>8}"]
    for c in d.cases:
        verdict = "IDENTICAL" if c.identical else f"{c.differing:,} differ"
        first = f"pos {c.first[0]:,} {c.first[1]}[{c.first[2]}]" if c.first else "-"
        out.append(f"{c.name:<30} {c.ctx:>7,}  {verdict:<18} {first:<26} {'same' if c.tokens_agree else 'differ':<6} "
                   f"{c.max_rel_logit_diff:>8.2e}")
    sizes = sorted({c.elements for c in d.cases})
    out.append(fit(f"each dump: {' or '.join(f'{n:,}' for n in sizes)} elements ({d.layers} layers, {d.positions} "
                   f"positions from ctx, every layer's residual stream and KDA output beside the logits). * the largest "
                   f"relative logit difference at the first position, where both arms decode the same token.", hang=2))
    return "\n".join(out)


def tolerance_table(d: IdentityData) -> str:
    out = [f"{'KDA kernel arm':<22} {'rel err o':>10} {'rel err state':>13} {'<= 1e-6':>8} {'bytes vs main':>14}"]
    ok = d.tolerance_passes()
    for k, v in d.kda_numeric.items():
        out.append(f"{k:<22} {v['rel_err_o']:>10.2e} {v['rel_err_state']:>13.2e} {'pass' if ok[k] else 'FAIL':>8} "
                   f"{'identical' if v['identical_to_baseline'] else 'different':>14}")
    return "\n".join(out)


def forms_table(d: IdentityData) -> str:
    out = [f"{'build':<25} {'form':<7} {'FFMA':>4} {'FMUL':>4} {'FADD':>4}  {'as SASS predicts':<16} "
           f"{'differ from two roundings':>25} {'rel err vs f64':>14}"]
    for f in d.forms:
        build = fma_forms.BUILDS[f.family][1]
        out.append(f"{build:<25} {f.form:<7} {f.ffma:>4} {f.fmul:>4} {f.fadd:>4}  {str(f.matches_prediction):<16} "
                   f"{f'{f.differ_from_two_roundings:,} of {f.elements:,}':>25} {f.rel_err_vs_f64:>14.1e}")
    return "\n".join(out)


def headline(d: IdentityData) -> dict:
    """The figures summary --json reports for §7."""
    return {"vt_identical_all_depths": all(c.identical for c in d.vt()) and len(d.vt()) == len(VT_DEPTHS),
            "fma_identical": d.fma().identical,
            "mla_split_identical_below_min_ctx": d.mla_identical_below_min_ctx(),
            "tolerance_1e6_passes_every_kda_arm": all(d.tolerance_passes().values())}
