"""The page's width: every line the course prints fits in WIDTH characters (issue 41), so a notebook reads on a
laptop, a 1280 x 720 slide and the course's website without a horizontal scroll bar.

`fit` wraps one long line at word boundaries, its continuation lines hung under the line's value (after a
label such as `time     ` or `  alone (cold L2): `), so a wrapped line still reads as one entry. A table is not
wrapped here: its columns are made to fit where it is printed."""
from __future__ import annotations

import re
import textwrap

WIDTH = 110
_LABEL = re.compile(r"^(\s*\S+(?: \S+)*?(?:\s{2,}|: ))")


def _hang(line: str) -> int:
    """Where a wrapped line's continuation starts: after its label (text followed by two spaces or by ': '
    within the first 32 characters), else two past its own indent."""
    m = _LABEL.match(line)
    if m and len(m.group(1)) <= 32:
        return len(m.group(1))
    return len(line) - len(line.lstrip()) + 2


def fit(line: str, width: int = WIDTH, hang: int | None = None) -> str:
    """`line` as one or more lines of at most `width` characters (a word longer than that stays whole)."""
    if len(line) <= width:
        return line
    indent = " " * (_hang(line) if hang is None else hang)
    return "\n".join(textwrap.wrap(line, width=width, subsequent_indent=indent, break_long_words=False,
                                   break_on_hyphens=False, drop_whitespace=True))


def fit_all(text: str, width: int = WIDTH) -> str:
    """Every line of `text` fitted (see `fit`)."""
    return "\n".join(fit(ln, width) for ln in text.split("\n"))
