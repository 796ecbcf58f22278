"""The course as a website (issue 41): `make site` (python -m launchlab site) builds build/site/ from the
committed notebooks, read like a book by a learner without a GPU; the notebooks remain the place to run.

The stack is Sphinx with MyST-NB and sphinx-book-theme (the engine of Jupyter Book 1), all from PyPI, building
offline: the notebooks are not executed (their committed replay outputs are the pages), the theme ships its own
assets, and nothing on a page loads from the internet (MathJax and the widget manager, the two CDN loads MyST-NB
can add, are off: an explorer shows its static preview). Jupyter Book 2 (mystmd) downloads its theme from GitHub
at build time (mystmd issues #207 and #1451), which cannot work here or on an offline class server.

What the site holds, in the lecture's order: a start page (the course map, the slide decks, the way to run it
live), every section notebook (00-10, the lab as learners get it), the glossary, and the page on running live;
Sphinx's own search (an index built with the pages, no server); the static reveal.js decks of `make slides`
copied beside the pages when they are built. tests/browser/site_pages.py opens every page in Chromium.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from launchlab import sections
from launchlab.core import paths
from launchlab.faces import glossary

SRC = paths.ROOT / "docs" / "site"               # conf.py and the pages that are not notebooks
NOTEBOOKS = paths.ROOT / "notebooks"
DECKS = paths.ROOT / "build" / "slides"           # make slides
OUT = paths.ROOT / "build" / "site"
STAGE = paths.ROOT / "build" / "site-src"


class SiteError(RuntimeError):
    pass


def pages() -> list[str]:
    """The site's documents in the lecture's order (their names without suffix), the start page first."""
    nbs = [n[:-len(".ipynb")] for s in sections.all() for n in s.notebooks]
    return ["index"] + nbs + [glossary.GLOSSARY.stem, "running-live"]


def index_page(decks: list[str]) -> str:
    """The start page: what the course is, its map, the decks, the table of contents in the lecture's order."""
    deck_rows = "<ul>\n" + "\n".join(f'<li><a href="decks/{d}">{d.removesuffix(".slides.html")}</a></li>'
                                     for d in decks) + "\n</ul>"     # raw HTML: a file beside the pages, not a doc
    deck_part = (f"## The slide decks\n\nEach section as a static reveal.js deck (press S for the speaker "
                 f"notes), offline:\n\n{deck_rows}\n" if decks else "")
    toc = "\n".join(p for p in pages() if p != "index")
    return f"""# Launch Geometry: Grids, Occupancy, and 327 Norms per Token

A course on GPU launch geometry, from Lecture 04: how many blocks a launch has against how many SMs the GPU has,
what occupancy a block size buys, how to tell a starved kernel from a contended one, and an audit of a real
decode step. Every number on these pages was measured on an NVIDIA H200 and is shown with its provenance; the
notebooks run the same kernels live on a GPU ([running the course live](running-live.md)).

{sections.course_map()}

Terms are defined in the [glossary](glossary.ipynb); each notebook links a term where it first uses it.

{deck_part}
```{{toctree}}
:maxdepth: 1
:caption: The course, in the lecture's order

{toc}
```
"""


def stage(out: Path = STAGE) -> Path:
    """The Sphinx source folder: conf.py and the pages of docs/site/, the committed notebooks, the start page
    and the decks (when make slides has built them)."""
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    for f in SRC.iterdir():
        if f.is_file():
            shutil.copy(f, out / f.name)
    for name in pages()[1:]:
        nb = NOTEBOOKS / f"{name}.ipynb"
        if nb.exists():
            shutil.copy(nb, out / nb.name)
        elif not (out / f"{name}.md").exists():
            raise SiteError(f"no page for {name!r}: neither notebooks/{name}.ipynb nor docs/site/{name}.md")
    target = out / "extra" / "decks"                 # html_extra_path: copied as is to the site's decks/
    target.mkdir(parents=True)
    decks = []
    if DECKS.is_dir():
        for f in DECKS.iterdir():
            if f.is_dir() and not f.name.startswith("."):
                shutil.copytree(f, target / f.name, ignore=shutil.ignore_patterns(".npm", ".version"))
            elif f.suffix == ".html":
                shutil.copy(f, target / f.name)
                decks.append(f.name)
    (out / "index.md").write_text(index_page(sorted(decks)))
    return out


def build(out: Path = OUT) -> dict:
    """Stage the sources and run Sphinx; what it built (pages, warnings) as a dict, also written to
    out/site-build.json."""
    try:
        import myst_nb  # noqa: F401
        import sphinx_book_theme  # noqa: F401
    except ImportError as e:
        raise SiteError(f"the site needs the `site` extra ({e.name} is missing): make site installs it") from e
    src = stage()
    if out.exists():
        shutil.rmtree(out)
    p = subprocess.run([sys.executable, "-m", "sphinx", "-b", "html", "-q", "-j", "1", str(src), str(out)],
                       capture_output=True, text=True, timeout=900)
    if p.returncode != 0:
        raise SiteError(f"sphinx-build failed ({p.returncode}):\n{p.stderr[-3000:]}")
    built = sorted(str(f.relative_to(out)) for f in out.glob("*.html") if f.stem in pages())
    warnings = [ln for ln in p.stderr.splitlines() if "WARNING" in ln]
    info = {"pages": len(built), "built": built, "expected": len(pages()), "warnings": len(warnings),
            "warning_lines": warnings[:50], "decks": sorted(f.name for f in (out / "decks").glob("*.html"))
            if (out / "decks").is_dir() else []}
    (out / "site-build.json").write_text(json.dumps(info, indent=1))
    return info


def main(argv=None) -> int:
    if argv and "--stage" in argv:                  # the sources only (no Sphinx needed): what the build reads
        src = stage()
        print(f"staged {len(pages())} pages into {src.relative_to(paths.ROOT)}")
        return 0
    try:
        info = build()
    except SiteError as e:
        print(f"site: {e}", file=sys.stderr)
        return 2
    print(f"built {info['pages']} of {info['expected']} pages into {OUT.relative_to(paths.ROOT)} "
          f"({len(info['decks'])} decks, {info['warnings']} Sphinx warnings)")
    for w in info["warning_lines"][:20]:
        print("  " + w)
    return 0 if info["pages"] == info["expected"] else 1
