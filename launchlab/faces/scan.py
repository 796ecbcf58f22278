"""Reading a learner's bytes in the grader's own process: every scan here is linear in what it reads, and none
uses a backtracking regular expression (issue 56).

A regex such as `"(?:[^"\\\\]|\\\\.)*"` is linear on a string that closes, but an unclosed one makes the engine scan to
the end from every later quote: one `"` followed by 120,000 `\\"` took 21 s at 80 KB, hours at 1 MiB, holding the
GIL. So the grader reads learner text only with:

    json_depth      how deep a JSON text's brackets nest, strings skipped: the escapes taken out by two
                    bytes.replace passes, then NumPy over chunks of CHUNK bytes (every quote left is a string's edge),
                    so 32 MiB of any bytes cost the same few vector passes (0.5-0.8 s on 2 CPUs), the GIL let go
                    between chunks
    answer_lines    the collector's lines on the answers channel: found from the end with bytes.rfind (C, linear),
                    at most MAX_LINES of them, each parsed by `json` only once json_shape has bounded its depth, its
                    lists and objects and its values (a line past them would hold the GIL while json builds it)
    marked_line     the re-run harness's report: the last line that starts with its mark, parsed the same way
    otter_cell      whether a cell's source is one of otter's own cells: a line-by-line look at each line's start
    step_heading    the lab step a markdown heading opens (`## Step 6`), read from its first line's start

Work that would cost more than a scan -- parsing the whole notebook, running its cells -- happens inside the
sandbox (launchlab.faces.collect, launchlab.faces.rerun_harness), under its time and memory limits.
"""
from __future__ import annotations

import json
from functools import cache

JSON_DEPTH = 64                 # nesting deeper than this is not a notebook (nbformat's own: about 8)
CHUNK = 1 << 22                 # bytes per vector pass of json_depth (4 MiB: ~100 MB of temporaries)
MAX_LINES = 64                  # answers-channel lines read, the last ones (an honest run writes one per step)
MAX_CONTAINERS = 100_000        # lists and objects in one line parsed (the master's fullest line: ~1,000); json
                                # builds 100,000 empty lists in ~50 ms, the GIL held -- 8 MiB of `[],` is 2.8 million
MAX_VALUES = 1_000_000          # values (commas) in one line parsed: a million numbers in ~0.1 s; an attack that
                                # answers 100,000-long lists in a 1,000-row table (slow_to_check_answers) needs ~210,000
_OPEN, _CLOSE = b"[{", b"]}"


def json_depth(data: bytes, limit: int = JSON_DEPTH) -> int:
    """How deep the brackets of a JSON text nest (brackets inside strings skipped), up to `limit` + 1 (json_shape)."""
    return json_shape(data, limit)[0]


def json_shape(data: bytes, limit: int = JSON_DEPTH) -> tuple[int, int, int]:
    """(depth, containers, commas) of a JSON text: how deep its brackets nest, brackets inside strings skipped,
    up to `limit` + 1 (exact for every text `json` accepts); how many lists and objects it opens; how many commas
    stand outside its strings (about how many values `json` would build); the counts stop where the depth passes
    `limit`. Linear: two bytes.replace passes take the escapes out (backslashes pair from the left, as JSON reads
    them: `\\\\` is one escaped backslash, then `\\"` is an escaped quote), so every quote left is a string's
    edge; then NumPy, chunk by chunk, counts the brackets and commas outside strings."""
    import numpy as np
    text = data.replace(b"\\\\", b"__").replace(b'\\"', b"__")
    inside = False              # the chunks so far ended inside a string
    depth = deepest = containers = commas = 0
    view = memoryview(text)
    for start in range(0, len(text), CHUNK):
        c = np.frombuffer(view[start:start + CHUNK], dtype=np.uint8)
        edge = c == 0x22
        parity = np.logical_xor.accumulate(edge)
        if inside:
            np.logical_not(parity, out=parity)
        step = _step_table()[c]
        step[parity] = 0                         # inside a string (a closing quote is no bracket either)
        containers += int(np.count_nonzero(step == 1))
        commas += int(np.count_nonzero((c == 0x2C) & ~parity))
        level = np.cumsum(step, dtype=np.int64)
        level += depth
        deepest = max(deepest, int(level.max()))
        if deepest > limit:
            return limit + 1, containers, commas
        depth = int(level[-1])
        inside = bool(parity[-1])
    return deepest, containers, commas


@cache
def _step_table():
    import numpy as np
    t = np.zeros(256, dtype=np.int8)
    for b in _OPEN:
        t[b] = 1
    for b in _CLOSE:
        t[b] = -1
    return t


def _bounded(line: bytes, depth: int) -> bool:
    """Whether `json` may parse the line: nested at most `depth`, at most MAX_CONTAINERS lists and objects and
    MAX_VALUES values (commas outside strings)."""
    d, n, commas = json_shape(line, depth)
    return d <= depth and n <= MAX_CONTAINERS and commas <= MAX_VALUES


def answer_lines(buf: bytes, prefix: bytes = b'{"answers": ', limit: int = MAX_LINES,
                 depth: int = JSON_DEPTH) -> list[dict]:
    """The last `limit` lines of `buf` that start with `prefix` and are JSON objects with an "answers" object, in
    the order written. Lines are found from the end with bytes.rfind; a line nested deeper than `depth`, with
    more than MAX_CONTAINERS lists and objects or MAX_VALUES values, not UTF-8 or not JSON is skipped, never
    trusted."""
    out: list[dict] = []
    end = len(buf)
    seen = 0
    while seen < limit:
        at = buf.rfind(b"\n" + prefix, 0, end)
        if at < 0:
            if buf.startswith(prefix) and end > 0:
                at = -1                              # the first line, with no newline before it
            else:
                break
        stop = buf.find(b"\n", at + 1, end)
        line = buf[at + 1:stop if stop >= 0 else end]
        end = max(at, 0)
        seen += 1
        if not _bounded(line, depth):
            continue
        try:
            got = json.loads(line.decode("utf-8"))
        except (ValueError, UnicodeDecodeError, RecursionError):
            continue
        if isinstance(got, dict) and isinstance(got.get("answers"), dict):
            out.append(got)
        if at < 0:
            break
    return out[::-1]


def marked_line(buf: bytes, mark: bytes, depth: int = JSON_DEPTH) -> dict | None:
    """The JSON object on the last line of `buf` that starts with `mark` (found by bytes.rfind; parsed only when its
    depth is bounded), or None when there is no such line or it is not one."""
    at = buf.rfind(b"\n" + mark)
    start = at + 1 if at >= 0 else (0 if buf.startswith(mark) else -1)
    if start < 0:
        return None
    stop = buf.find(b"\n", start)
    line = buf[start + len(mark):stop if stop >= 0 else len(buf)]
    if not _bounded(line, depth):
        return None
    try:
        got = json.loads(line.decode("utf-8"))
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    return got if isinstance(got, dict) else None



def _word_end(text: str, i: int) -> bool:
    return i >= len(text) or not (text[i].isalnum() or text[i] == "_")


def otter_cell(source: str) -> bool:
    """Whether a code cell is one of otter's own (it imports otter, makes `grader = otter.Notebook(...)`, or calls
    `grader.check(...)` at the start of a line): each line's leading blanks skipped once, so linear in the source."""
    for line in source.split("\n"):
        s = line.lstrip(" \t\r\f\v")
        if s.startswith("import otter") and _word_end(s, len("import otter")):
            return True
        if s.startswith("grader.check("):
            return True
        if s.startswith("grader") and _word_end(s, len("grader")):
            rest = s[len("grader"):].lstrip(" \t")
            if rest.startswith("=") and rest[1:].lstrip(" \t").startswith("otter."):   # `==` never gets here
                return True
    return False


def step_heading(source: str) -> str | None | bool:
    """What a markdown cell's first heading line says of the lab's steps: "q6" for `## Step 6 ...`, False for a
    `##` heading of another name (it ends the steps), None for anything else. Reads the first line only."""
    s = source.lstrip(" \t\r\n\f\v")
    line = s.split("\n", 1)[0]
    if not line.startswith("##") or line.startswith("###"):
        return None
    rest = line[2:].lstrip(" \t\r\f\v")
    if rest.startswith("Step"):
        after = rest[4:]
        blanks = len(after) - len(after.lstrip(" \t\r\f\v"))
        digits = ""
        for ch in after[blanks:]:
            if not ch.isdigit():
                break
            digits += ch
        if blanks and digits and digits.isascii():
            return f"q{int(digits)}"
    return False


def worst_inputs(n: int) -> dict[str, bytes]:
    """Inputs of about n bytes built to be worst-case for a backtracking string, line or bracket matcher: the
    grader's own benchmark times every reader on them at its size limit (grading.parse_seconds)."""
    return {"quote_then_escaped_quotes": b'"' + b'\\"' * ((n - 1) // 2),      # issue 56's 240 KB file, grown
            "backslashes": b"\\" * n, "quotes": b'"' * n, "newlines": b"\n" * n, "blanks": b" " * n,
            "open_brackets": b"[" * n, "pairs": b"[" + b"[]," * ((n - 2) // 3) + b"]",
            "strings_unclosed": b'["' + b"\\\\" * ((n - 2) // 2),
            "numbers": b"[" + b"1," * ((n - 2) // 2) + b"]"}
