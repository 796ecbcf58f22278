"""Benchmarks: ratios measured side by side in one run, never absolute numbers compared across runs.

    python -m launchlab bench stream    # §1: peak streaming read vs the copy ceiling; gate arms ABBA
    python -m launchlab bench rms       # §2: original vs widened apply ABBA per width; CuPy array ops
    python -m launchlab bench kda       # §3: grid = n_head vs value tiles ABBA; FLA's kernel beside them
    python -m launchlab bench mla       # §4: hardcoded vs derived split floor ABBA; PyTorch beside them
    python -m launchlab bench decode    # §6: the full-depth decode step, `main` preset vs the fixed defaults
    python -m launchlab bench pdl       # §2/§6: 327-norm graphs with and without PDL, ABBA; the chain's gaps
    python -m launchlab bench host      # the host's cost per launch: CuPy, checked, the chain path; the eager step

Everything here needs a GPU (live mode). Each benchmark lives in its section's folder (`bench.py`), offered
here through the section's manifest.
"""
from __future__ import annotations

from launchlab import sections
from launchlab.core import mode


def benches() -> dict:
    """{name: benchmark} from every registered section's manifest, in the registry's order."""
    out: dict = {}
    for sec in sections.all():
        for name, fn in sec.benches.items():
            if name in out:
                raise ValueError(f"benchmark {name!r} is declared by two sections")
            out[name] = fn
    return out


def main(what) -> int:
    known = benches()
    unknown = [w for w in what if w not in known]
    if unknown:
        print(f"unknown benchmark {unknown[0]!r}; known: {', '.join(known)}")
        return 2
    mode.require_live("benchmarks")
    for w in what or [next(iter(known))]:
        known[w]()
    return 0
