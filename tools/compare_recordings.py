"""Compare a fresh set of recordings with the committed ones: same shape, and the headline figures side by side.

    python tools/compare_recordings.py NEW_DIR [OLD_DIR]      (OLD_DIR defaults to data/recordings)

Shape: every key path of the committed recording's data exists in the new one and vice versa (lists of
measured points may differ in length only where a sweep's configuration changed). Exit status 1 when a shape
differs. The figures are printed, never compared against a tolerance: a re-recording is new evidence, and
whether to commit it is a person's decision.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from launchlab.faces import summary  # noqa: E402


def paths(v, prefix="") -> set[str]:
    if isinstance(v, dict):
        out = {prefix}
        for k, x in v.items():
            out |= paths(x, f"{prefix}.{k}" if not k.isdigit() else f"{prefix}.<n>")
        return out
    if isinstance(v, list) and v and isinstance(v[0], (dict, list)):
        return {prefix} | set().union(*(paths(x, prefix + "[]") for x in v))
    return {prefix}


def main(new: str, old: str = str(ROOT / "data" / "recordings")) -> int:
    bad = 0
    for p in sorted(Path(old).glob("*.json")):
        q = Path(new) / p.name
        if not q.exists():
            print(f"{p.stem:<10} not in {new}")
            continue
        a, b = json.loads(p.read_text())["data"], json.loads(q.read_text())["data"]
        only_old, only_new = paths(a) - paths(b), paths(b) - paths(a)
        ok = not only_old and not only_new
        bad += not ok
        print(f"{p.stem:<10} shape {'same' if ok else 'DIFFERS'}"
              + (f"; only committed: {sorted(only_old)[:5]}" if only_old else "")
              + (f"; only new: {sorted(only_new)[:5]}" if only_new else ""))
    fa, fb = summary.figures(old), summary.figures(new)
    print(f"\n{'figure':<52} {'committed':>12} {'new':>12}")
    for sec in fa:
        for k, v in fa[sec].items():
            print(f"{sec + '.' + k:<52} {str(v):>12} {str(fb.get(sec, {}).get(k)):>12}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
