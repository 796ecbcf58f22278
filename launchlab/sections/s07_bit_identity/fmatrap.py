"""§7.1 the FMA trap: `a * b + c` written three ways, what the compiler makes of each, and the bytes each gives.

    tmp      float tmp = a * b; out = tmp + c;     a separate statement -- nvcc still contracts it into FFMA
    inline   out = a * b + c;                      contracted into FFMA
    rn       out = __fmul_rn(a, b) + c;            a rounded product: never contracted (FMUL + FADD)

kernels/fma_forms.cu compiles them as the course compiles everything (-fmad=true, nvcc's default);
kernels/fma_forms_strict.cu compiles the same three with -fmad=false scoped to that one file. `sass_table()`
counts FFMA / FMUL / FADD in each function's SASS (offline: NVRTC and the wheels' cuobjdump). A fused form
rounds once, a separate one twice, so their bytes differ wherever the product's rounding matters:
`expected()` gives each form's bytes exactly on the CPU (launchlab.core.floatbits.fma32), and the GPU test checks
the kernels give exactly those bytes. A tolerance test passes every form; only the bytes tell them apart.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np

from launchlab.core import compiler, floatbits, sass
from launchlab.kernels import fma_forms
from launchlab.kernels.fma_forms import BUILDS, FORMS, fused, separate


@dataclass(frozen=True)
class Form:
    family: str
    form: str
    kernel: str
    ffma: int
    fmul: int
    fadd: int

    @property
    def fused(self) -> bool:
        return self.ffma > 0 and self.fmul == 0

    @property
    def build(self) -> str:
        return BUILDS[self.family][1]


def _op(ins: str) -> str:
    parts = ins.split()
    op = parts[1] if parts[0].startswith("@") else parts[0]
    return op.split(".")[0]


def sass_table() -> list[Form]:
    """Every form in both builds, with its FFMA / FMUL / FADD counts from the SASS (no GPU needed)."""
    out = []
    for fam, (prefix, _) in BUILDS.items():
        b = compiler.compile_offline(fam)
        text = b.sass()
        for form in FORMS:
            name = f"{prefix}_{form}"
            c = Counter(_op(i) for i in sass.sass_instructions(sass.function_sass(text, b.lowered.get(name, name))))
            out.append(Form(fam, form, name, c["FFMA"], c["FMUL"], c["FADD"]))
    return out


def expected(f: Form, a, b, c) -> np.ndarray:
    """The bytes form `f` gives, from what its SASS does."""
    return fused(a, b, c) if f.fused else separate(a, b, c)


def differ(a, b, c) -> int:
    """How many elements a fused and a separate evaluation give different bits for."""
    return int(np.count_nonzero(floatbits.bits(fused(a, b, c)) != floatbits.bits(separate(a, b, c))))


def run(f: Form, a, b, c) -> np.ndarray:
    """Live: the kernel of form `f` on the GPU, its output bytes."""
    return fma_forms.run(f.family, f.kernel, a, b, c)
