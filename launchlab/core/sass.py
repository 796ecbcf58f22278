"""SASS, the GPU's machine code, read from a cubin with the cuobjdump/nvdisasm wheels: one function's
instructions, and the loop bodies with the global loads each trip issues (no GPU needed)."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from launchlab.core.sources import KernelError


# ---------------------------------------------------------------- SASS through the wheels' cuobjdump
def _cuda_bin_dirs() -> list[Path]:
    dirs = []
    try:
        import nvidia  # namespace package from the nvidia-* wheels
        for base in getattr(nvidia, "__path__", []):
            for sub in ("cu13/bin", "cuda_cuobjdump/bin", "cuda_nvdisasm/bin"):
                p = Path(base) / sub
                if p.is_dir():
                    dirs.append(p)
    except ImportError:
        pass
    return dirs


def tool(name: str) -> str | None:
    """Path of a CUDA binary tool (cuobjdump, nvdisasm): the wheels first, then PATH."""
    for d in _cuda_bin_dirs():
        if (d / name).exists():
            return str(d / name)
    return shutil.which(name)


@lru_cache(maxsize=32)        # a cuobjdump run is ~0.5 s; §2 asks for the same cubin's SASS once per arm
def disassemble(cubin: bytes) -> str:
    cuobjdump, nvdisasm = tool("cuobjdump"), tool("nvdisasm")
    if not cuobjdump or not nvdisasm:
        raise KernelError("SASS needs cuobjdump and nvdisasm (the nvidia-cuda-cuobjdump and "
                          "nvidia-cuda-nvdisasm wheels; make setup installs them)")
    env = dict(os.environ, PATH=os.pathsep.join([str(Path(nvdisasm).parent), os.environ.get("PATH", "")]))
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        r = subprocess.run([cuobjdump, "-sass", f.name], capture_output=True, text=True, env=env, timeout=120)
    if r.returncode != 0:
        raise KernelError(f"cuobjdump failed: {r.stderr.strip()}")
    return r.stdout


def function_sass(sass: str, mangled: str) -> str:
    """The part of a cuobjdump listing that belongs to one function."""
    blocks = re.split(r"\n(?=\s*Function : )", sass)
    for b in blocks:
        if re.search(rf"Function : {re.escape(mangled)}\s", b + "\n"):
            return b
    raise KernelError(f"function {mangled} not in the SASS listing")


def sass_instructions(sass: str) -> list[str]:
    """The opcodes (with modifiers) of a SASS listing, e.g. 'LDG.E.128.CONSTANT'."""
    ops = []
    for m in re.finditer(r"/\*[0-9a-f]{4}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]+)", sass):
        ops.append(m.group(1))
    return ops


@dataclass(frozen=True)
class Loop:
    """One loop of a SASS listing: the instructions from a conditional backward branch's target to the branch."""
    start: int
    end: int
    ops: tuple[str, ...]

    @property
    def global_loads(self) -> int:
        """LDG instructions in one trip: independent loads a thread can have in flight per iteration."""
        return sum(1 for o in self.ops if o.startswith("LDG"))

    @property
    def global_stores(self) -> int:
        return sum(1 for o in self.ops if o.startswith("STG"))


def loop_bodies(sass: str) -> list[Loop]:
    """The loops of one function's SASS, in address order: every predicated branch (@P / @!P) to a lower
    address closes one. Unpredicated backward jumps are left out -- they return from out-of-line code (a
    divergent shuffle's slow path), and the listing's final `BRA self` is padding."""
    rows = [(int(m.group(1), 16), m.group(2), m.group(3))
            for m in re.finditer(r"/\*([0-9a-f]{4,})\*/\s+(@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]+)[^;]*;", sass)]
    loops = []
    for addr, pred, op in rows:
        if not pred or not op.startswith("BRA"):
            continue
        line = re.search(rf"/\*{addr:04x}\*/[^;]*;", sass).group(0)
        target = re.search(r"0x([0-9a-f]+)\s*;", line)
        if target and int(target.group(1), 16) < addr:
            t = int(target.group(1), 16)
            loops.append(Loop(t, addr, tuple(o for a, _, o in rows if t <= a <= addr)))
    return sorted(loops, key=lambda lp: lp.start)
