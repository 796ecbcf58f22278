"""The grade book: grades.csv written as each submission's row is done, and the names under feedback/ and
report/, safe whatever a learner names a file.

Every field of grades.csv passes `spreadsheet_safe`: its control characters made visible (`visible`), then a
leading = + - @ (or a tab or CR: OWASP's "CSV injection" list) quoted with an apostrophe, so a submission named
`=HYPERLINK("http://...","x").ipynb` is text in a spreadsheet, not a formula, and one whose name or output holds
ESC [ 1 A (cursor up), ESC ] 0 ; (a window title), a carriage return or a backspace moves nothing on the
instructor's terminal when `grade` prints the sheet: it reads `\x1b[1A`. Feedback and reports are written through
`visible` too, their own newlines kept. `file_name` makes a learner's name a plain file name (no path, not hidden).
"""
from __future__ import annotations

import csv
import os
import threading
from pathlib import Path


# Unicode's bidirectional controls: invisible, and they reorder what a terminal or an editor shows (Trojan Source,
# CVE-2021-42574); shown as escapes beside the C0 and C1 controls
BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def _shown(ch: str) -> str:
    o = ord(ch)
    return f"\\x{o:02x}" if o < 0x100 else f"\\u{o:04x}"


def visible(text, newlines: bool = False) -> str:
    """`text` with every C0 and C1 control character (ESC, CSI, OSC, BEL, backspace, carriage return, NUL, DEL, ...)
    and every bidirectional control replaced by a visible escape (`\x1b`, `\u202e`); tab kept, and newline kept
    only where `newlines` allows one. Linear in the text."""
    text = str(text)
    if text.isprintable() and text.isascii():
        return text
    out = []
    for ch in text:
        o = ord(ch)
        if ch == "\t" or (ch == "\n" and newlines):
            out.append(ch)
        elif o < 0x20 or 0x7F <= o < 0xA0 or ch in BIDI:
            out.append(_shown(ch))
        else:
            out.append(ch)
    return "".join(out)


def spreadsheet_safe(text: str) -> str:
    """A CSV field a spreadsheet shows as text and a terminal shows as it is: control characters made visible
    (no newline kept: a field that broke its line could forge a row), then a leading = + - @ (or tab) quoted."""
    text = visible(text)
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


