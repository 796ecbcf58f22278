"""The last step of .ci/run: check the reports .ci/run has just regenerated, and the committed ones against them.

    python tools/check_reports.py COMMITTED_DIR

COMMITTED_DIR holds the committed data/browser/report.json and data/hub/report.json as they were before
`make test-browser` and `make hub-test` rewrote them (.ci/run copies them there first). Their outcome fields
(how many notebooks, widgets, console errors and failures; how many learners ran, concurrently, and whether
the hub stopped) must be the same in the regenerated reports: the summary reads the committed ones. Then the
tests marked `reports` run again, now on the regenerated reports. Timings and dates may differ. Prints a table.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIELDS = {"browser": ("notebooks", "widgets_moved", "console_errors", "failed", "presenter"),
          "hub": ("learners", "learners_ok", "concurrent", "hub_stopped_cleanly"),
          "site": ("pages", "pages_opened", "pages_ok", "console_errors", "external_requests", "broken_links")}


def compare(committed: Path) -> list[tuple[str, str, object, object]]:
    rows = []
    for name, fields in FIELDS.items():
        old = json.loads((committed / name / "report.json").read_text())
        new = json.loads((ROOT / "data" / name / "report.json").read_text())
        rows += [(name, f, old.get(f), new.get(f)) for f in fields]
    return rows


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print(__doc__)
        return 2
    rows = compare(Path(argv[0]))
    tests = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "reports", "tests"],
                           cwd=ROOT)
    print(f"{'report':<8} {'field':<22} {'committed':>12} {'regenerated':>12}")
    for name, f, old, new in rows:
        print(f"{name:<8} {f:<22} {old!s:>12} {new!s:>12}{'' if old == new else '   DIFFERS'}")
    differ = [r for r in rows if r[2] != r[3]]
    print(f"{len(differ)} outcome fields differ; the report tests on the regenerated reports: "
          f"{'passed' if tests.returncode == 0 else 'FAILED'}")
    return 1 if differ or tests.returncode else 0


if __name__ == "__main__":
    sys.exit(main())
