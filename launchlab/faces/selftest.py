"""Every kernel against its numpy reference, on small inputs (live), as named checks.

    python -m launchlab selftest            # all checks in one process (what compute-sanitizer runs)
    pytest tests/test_gpu_kernels.py        # the same checks, one parametrized GPU test per id

A check is a function that returns a short message and raises AssertionError when the kernel is wrong.
Checks live in their sections' folders (launchlab.core.checks); inputs are small enough that the whole set runs under compute-sanitizer
in seconds. Shared GPU fixtures (a 64 MiB buffer, the wave kernels) are made once per process.
"""
from __future__ import annotations

from launchlab import sections
from launchlab.core.checks import CHECKS

sections.all()          # every registered section's checks, declared by the modules its manifest names


def run() -> dict[str, tuple[bool, str]]:
    """Every check in this process: {id: (passed, message)}."""
    res = {}
    for c in CHECKS:
        try:
            res[c.id] = (True, c.run())
        except AssertionError as e:
            res[c.id] = (False, str(e))
    return res


def main() -> int:
    res = run()
    width = max(len(k) for k in res)
    for k, (ok, msg) in sorted(res.items(), key=lambda kv: kv[1][0], reverse=True):   # failures last
        print(f"{'ok  ' if ok else 'FAIL'} {k:<{width}}  {msg}")
    bad = [k for k, (ok, _) in res.items() if not ok]
    print(f"{len(res) - len(bad)} passed, {len(bad)} failed")
    return 1 if bad else 0
