"""Taking a submission in (grading, before anything runs): what a file in the submissions folder must be to be
graded, and how its name may appear in a spreadsheet.

A submission is graded only as a regular file of at most SUBMISSION_BYTES, whose every hard link is in the
submissions folder, opened without following a link and without blocking, checked on the open descriptor and
read once (`intake`): a symbolic link (to the master, to another learner's file, to /dev/zero), a FIFO, a device,
a directory, a hard link to a file elsewhere and an oversized file are refused, with the reason in the learner's
row. Its text must be a JSON object nested at most JSON_DEPTH deep (`notebook_or_why`: launchlab.faces.scan's
linear scan, in the grader's own process); the notebook is parsed only inside the sandbox, under its limits
(launchlab.faces.collect says "not a notebook" there), so no learner's bytes cost the grader more than a scan.
"""
from __future__ import annotations

import os
import stat
from pathlib import Path

from launchlab.faces.scan import JSON_DEPTH, json_depth  # noqa: F401 - the intake's depth rule and its scan

MiB = 1 << 20
SUBMISSION_BYTES = 32 * MiB     # a notebook larger than this is refused (the master with its outputs: ~0.2 MiB)


def intake(path: Path, links_here: int = 1, cap: int = SUBMISSION_BYTES) -> bytes | str:
    """The bytes of one submission, or why it is refused. Opened without following a link and without blocking
    (a FIFO does not hang the grader), then checked on the open descriptor: a regular file, with no hard link
    outside the submissions folder (`links_here`: the names it has there), at most `cap` bytes, read once --
    what is graded is what was checked, whatever the folder's owner does to the name meanwhile."""
    try:
        st = os.lstat(path)
    except OSError as e:
        return f"refused: it could not be read ({e.strerror})"
    if stat.S_ISLNK(st.st_mode):
        return "refused: a symbolic link, not a file (a submission is taken only as a regular file)"
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as e:
        return f"refused: it could not be opened as a file ({e.strerror})"
    try:
        st = os.fstat(fd)
        kind = ("a directory" if stat.S_ISDIR(st.st_mode) else "a FIFO" if stat.S_ISFIFO(st.st_mode) else
                "a device" if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode) else
                "a socket" if stat.S_ISSOCK(st.st_mode) else None)
        if kind or not stat.S_ISREG(st.st_mode):
            return f"refused: {kind or 'not a regular file'}, not a notebook file"
        if st.st_nlink > max(1, links_here):
            return (f"refused: a hard link to a file outside the submissions folder ({st.st_nlink} names, "
                    f"{links_here} of them here)")
        if st.st_size > cap:
            return f"refused: {st.st_size / MiB:.1f} MiB, over the {cap / MiB:g} MiB a submission may be"
        chunks, n = [], 0
        while n <= cap:
            b = os.read(fd, min(1 << 20, cap + 1 - n))
            if not b:
                break
            chunks.append(b)
            n += len(b)
        if n > cap:
            return f"refused: over the {cap / MiB:g} MiB a submission may be (it grew while read)"
        return b"".join(chunks)
    finally:
        os.close(fd)


def notebook_or_why(data: bytes) -> str | None:
    """None when `data` may be a notebook (a JSON object, nested at most JSON_DEPTH deep); else why it is not one.
    Two linear looks, nothing parsed: whether its cells are there is the collector's to say, in the sandbox."""
    if not data.lstrip(b" \t\r\n").startswith(b"{"):
        return "not a notebook (not a JSON object)"
    if json_depth(data) > JSON_DEPTH:
        return f"not a notebook (nested deeper than {JSON_DEPTH} levels)"
    return None


def submissions(folder: Path) -> list[tuple[Path, int]]:
    """Every *.ipynb name in `folder` (whatever it is: intake decides), with how many names in the folder its
    file has (hard links between two submissions are the same file, not an escape)."""
    entries = sorted((e for e in os.scandir(folder) if e.name.endswith(".ipynb")), key=lambda e: e.name)
    inodes: dict = {}
    for e in entries:
        try:
            st = e.stat(follow_symlinks=False)
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode):
            inodes[(st.st_dev, st.st_ino)] = inodes.get((st.st_dev, st.st_ino), 0) + 1
    out = []
    for e in entries:
        try:
            st = e.stat(follow_symlinks=False)
            n = inodes.get((st.st_dev, st.st_ino), 1) if stat.S_ISREG(st.st_mode) else 1
        except OSError:
            n = 1
        out.append((Path(folder) / e.name, n))
    return out


