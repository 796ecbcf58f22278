"""Self-test checks: a kernel against its numpy reference on small inputs (live), as a named check.

A section declares its checks in its own folder (`@check(section, id)` in its checks module); the self-test
(launchlab.faces.selftest, `python -m launchlab selftest`, tests/test_gpu_kernels.py) runs every registered
section's checks. A check returns a short message and raises AssertionError when the kernel is wrong.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from launchlab.core import mode

TOL = 1e-5


@dataclass(frozen=True)
class Check:
    id: str
    section: str
    fn: Callable[[], str]

    def run(self) -> str:
        mode.require_live("the kernel self-test")
        return self.fn()


CHECKS: list[Check] = []


def check(section: str, id_: str):
    def deco(fn):
        CHECKS.append(Check(id_, section, fn))
        return fn
    return deco


def below(err: float, tol: float) -> str:
    assert err < tol, f"max rel err {err:.2e} >= {tol:.0e}"
    return f"max rel err {err:.2e}"
