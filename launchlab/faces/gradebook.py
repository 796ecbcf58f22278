"""The grade book: grades.csv written as each submission's row is done, and the names under feedback/ and
report/, safe whatever a learner names a file.

Every field of grades.csv passes `spreadsheet_safe`: a leading = + - @ (or a tab or CR: OWASP's "CSV injection"
list) is quoted with an apostrophe, so a submission named `=HYPERLINK("http://...","x").ipynb` is text in a
spreadsheet, not a formula. `file_name` makes a learner's name a plain file name (no path, not hidden).
"""
from __future__ import annotations

import csv
import os
import threading
from pathlib import Path


def spreadsheet_safe(text: str) -> str:
    """A CSV field a spreadsheet shows as text: a leading = + - @ (or tab, CR) would make it a formula."""
    text = str(text)
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


class Sheet:
    """grades.csv written as rows finish (flushed, so a run stopped midway keeps what it graded), then once
    more in the learners' order; every field spreadsheet-safe."""

    def __init__(self, path: Path, questions: tuple):
        self.path, self.questions, self.lock = Path(path), questions, threading.Lock()
        self.f = self.path.open("w", newline="")
        self.w = csv.writer(self.f)
        self.w.writerow(["learner", *questions, "total", "possible", "status"])
        self.f.flush()

    def row(self, r) -> list:
        return [spreadsheet_safe(r.learner), *(f"{r.points.get(q, 0.0):g}" for q in self.questions),
                f"{r.total:g}", f"{r.out_of:g}", spreadsheet_safe(r.status)]

    def add(self, r) -> None:
        with self.lock:
            self.w.writerow(self.row(r))
            self.f.flush()

    def close(self, rows: list) -> None:
        self.f.close()
        tmp = self.path.with_suffix(".csv.tmp")
        with tmp.open("w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["learner", *self.questions, "total", "possible", "status"])
            for r in sorted(rows, key=lambda r: r.learner):
                w.writerow(self.row(r))
        os.replace(tmp, self.path)


def file_name(learner: str) -> str:
    """A learner's name as a file name under feedback/ and report/: itself where it is plain; else its plain
    characters and a hash of the whole, so two odd names never share a file (never a path, never hidden)."""
    import hashlib
    name = "".join(ch if ch.isalnum() or ch in "-_.=+@(),' " else "_" for ch in learner)[:150].lstrip(".")
    if name == learner:
        return name
    return f"{name or '_'}-{hashlib.sha256(learner.encode('utf-8', 'surrogateescape')).hexdigest()[:8]}"


