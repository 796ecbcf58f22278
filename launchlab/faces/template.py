"""A new section from the template in docs/section-template/ (docs/adding-a-section.md walks through it).

The template holds every file a section needs, at the paths it takes in the repository, with `${key}`,
`${name}`, `${family}` and `${title}` in place of the section's own: its folder under launchlab/sections/
(manifest, lesson with its door, figures, exercises, self-test checks), and, outside the folder, its kernel
(kernels/), its notebook (notebooks/) and its test (tests/). The one other edit is its line in the registry
(launchlab/sections/__init__.py). `instantiate` writes them all into a checkout; nothing else changes, and the
recorder, summary, selftest, bench, exercises and course pick the section up from the registry.

    python -m launchlab new-section 11 my_topic "§11 my topic"       # family defaults to the name

and the README's map of the sections is written from the registry (`python -m launchlab sections --readme`).
"""
from __future__ import annotations

import re
from pathlib import Path
from string import Template

from launchlab.core import paths

TEMPLATE = paths.ROOT / "docs" / "section-template"
REGISTRY = Path("launchlab") / "sections" / "__init__.py"


def files() -> list[Path]:
    """The template's files, relative to its root (their names still hold the placeholders)."""
    return sorted(p.relative_to(TEMPLATE) for p in TEMPLATE.rglob("*") if p.is_file() and "__pycache__" not in p.parts)


# The files a new section adds or edits outside its own folder: its kernel, its notebook, its test, and the
# registry (one line). summary --json reports how many ("files_outside_folder_to_add_a_section").
OUTSIDE: tuple[str, ...] = tuple(str(p) for p in files() if p.parts[:2] != ("launchlab", "sections")) + (str(REGISTRY),)


def instantiate(root: Path, key: str, name: str, title: str, family: str | None = None) -> list[Path]:
    """Write a new section into the checkout at `root`; returns every file written or edited."""
    if not re.fullmatch(r"\d\d", key) or not re.fullmatch(r"[a-z][a-z0-9_]*", name):
        raise ValueError("key: two digits (the notebook's number); name: lower-case letters, digits and _")
    folder = f"s{key}_{name}"
    registry = Path(root) / REGISTRY
    text = registry.read_text()
    if f'"{folder}"' in text:
        raise ValueError(f"{folder} is already registered")
    values = {"key": key, "name": name, "title": title, "family": family or name, "folder": folder}
    written = []
    for rel in files():
        dst = Path(root) / Template(str(rel)).substitute(values)
        if dst.exists():
            raise FileExistsError(f"{dst} exists: pick another key or name")
        dst.parent.mkdir(parents=True, exist_ok=True)
        dst.write_text(Template((TEMPLATE / rel).read_text()).safe_substitute(values))
        written.append(dst)
    # the one registry line: after the last folder of FOLDERS
    new, n = re.subn(r'(FOLDERS = \(\n(?:    "[^"]+",\n)*)', lambda m: m.group(1) + f'    "{folder}",\n', text, count=1)
    if n != 1:
        raise ValueError(f"{registry}: FOLDERS not found in the form this template edits")
    registry.write_text(new)
    return written + [registry]


README = paths.ROOT / "README.md"
BEGIN, END = "<!-- sections: begin (python -m launchlab sections --readme) -->", "<!-- sections: end -->"


def readme_with_map(text: str, course_map: str) -> str:
    """The README with the course's map between its markers, as the registry gives it."""
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{BEGIN}\n{course_map}\n{END}{tail}"
