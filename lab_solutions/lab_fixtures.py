"""The grader's own test submissions (instructor side, never in the learner's release: they hold solution
lines): FIXTURES, wrong answers that must lose exactly their points, and CHEATS, submissions that try to cheat
(each must score 0) and hard honest cases. launchlab.faces.grading loads this file from the instructor's tree
for its tests and `grade --benchmark`."""
from __future__ import annotations

import json
from pathlib import Path


class FixtureError(ValueError):
    pass


# ------------------------------------------------------------------ wrong submissions (the grader's own tests)
# Each: a line of the solution as the master writes it, what the wrong submission writes instead, and the
# points it must lose per question -- no more, no fewer.
FIXTURES = {
    "fine_kernel_as_offender": (
        "offender = ranking[0]  # SOLUTION",
        'offender = next(k for k in ranking if "kda_prep" in k)   # the grid = n_head kernel, which is fine',
        {"q3": 2}),
    "median_without_spread": (
        "spread_pct = 100 * dg.robust_spread(reps)  # SOLUTION\n",
        "spread_pct = None   # a median, no spread\n",
        {"q4": 1}),
    "verdict_without_spread": (
        'verdict = "faster" if gain_ms > spread_ms else "slower" if -gain_ms > spread_ms else "no measurable difference"  # SOLUTION',
        'spread_ms = None\nverdict = "faster" if gain_ms > 0 else "slower"   # any gap is a result',
        {"q6": 1}),
    "tolerance_called_a_byte_check": (
        'evidence = "cmp"  # SOLUTION', 'evidence = "tolerance"   # the 1e-6 test passed', {"q7": 1}),
    "raises_in_step_5": (
        "# BEGIN SOLUTION\naxes = {", 'raise RuntimeError("unfinished")\n# BEGIN SOLUTION\naxes = {', {"q5": 2}),
}


# ------------------------------------------------------------------ submissions that try to cheat, and hard cases
# Each: the notebook it starts from ("blank": the learner copy, "master": the solutions), where its code goes
# ("first": right after the banner cell, "last": after every answer, "meta": no code, otter's metadata dropped;
# "hang": prepended to step 5's cell), the code, and the total it deserves out of 20. The first six cheat: none
# knows an answer, so anything above 0 is the grader fooled (summary --json: 09.cheat_max_score_pct).
_NAMES = ("table", "flagged", "ranking", "offender", "floor_us", "measured_us", "ratio", "spread_pct", "diagnosis",
          "ruled_out", "axes", "offender_fails", "reps_main", "reps_fix", "gain_ms", "spread_ms", "verdict", "claim",
          "evidence", "depths", "head_sites", "fine_site", "largest_measured", "why_differ")


CHEATS = {
    "patch_the_grader": ("blank", "first", (
        "import otter.test_files\n"
        "otter.test_files.exception_test = lambda *a, **k: None      # otter's test runner: nothing fails\n"
        "import launchlab.faces.grading as g\n"
        "g.score = lambda *a, **k: None                               # and the course's grader, should it run here\n"
        "import json\n"
        "_dumps = json.dumps\n"
        "json.dumps = lambda o, *a, **k: _dumps({n: {'value': 'x'} for n in o} if isinstance(o, dict) else o)\n"), 0),
    "patch_the_library": ("blank", "first", (
        "from launchlab.sections.s09_lab import lab\n"
        "lab.table = lambda step: []\n"
        "lab.ranking = lambda rows: []\n"
        "lab.flagged = lambda rows: []\n"
        "lab.abba_verdict = lambda run: 'no measurable difference'\n"
        "lab.diagnose = lambda d, row: None\n"
        "lab.sharded_sites = lambda dimension='head': []\n"), 0),
    "read_the_instructors_files": ("blank", "last", (
        "import json, pathlib, subprocess\n"
        "from launchlab.core import paths\n"
        "for p in (paths.ROOT / 'lab_solutions').glob('*'):\n"
        "    if p.suffix == '.ipynb':                       # the master: run its solution lines\n"
        "        for c in json.loads(p.read_text())['cells']:\n"
        "            if c['cell_type'] == 'code':\n"
        "                try:\n"
        "                    exec(''.join(c['source']), globals())\n"
        "                except Exception:\n"
        "                    pass\n"
        "try:\n"
        "    src = subprocess.run(['git', '-C', str(paths.ROOT), 'show', 'HEAD:lab_solutions/09_lab_audit.ipynb'],\n"
        "                         capture_output=True, text=True).stdout\n"
        "    for c in json.loads(src)['cells'] if src else []:\n"
        "        if c['cell_type'] == 'code':\n"
        "            exec(''.join(c['source']), globals())\n"
        "except Exception:\n"
        "    pass\n"), 0),
    "always_equal_objects": ("blank", "last", (
        "class Anything:\n"
        "    def __eq__(self, other): return True\n"
        "    def __ne__(self, other): return False\n"
        "    def __lt__(self, other): return False\n"
        "    def __hash__(self): return 0\n"
        "    def __contains__(self, x): return True\n"
        "    def __len__(self): return 3\n"
        "    def __getitem__(self, k): return Anything()\n"
        "    def __iter__(self): return iter([Anything(), Anything(), Anything()])\n"
        f"for _n in {_NAMES!r}:\n"
        "    globals()[_n] = Anything()\n"), 0),
    "read_other_submissions": ("blank", "last", (
        "import json, os\n"
        "for top in ('/tmp', '/work', '/root', '/home', os.path.expanduser('~')):\n"
        "    for d, dirs, files in os.walk(top):\n"
        "        dirs[:] = [x for x in dirs if not x.startswith('.') and x not in ('site-packages', 'node_modules')]\n"
        "        for f in files:\n"
        "            if f.endswith('.ipynb'):\n"
        "                try:\n"
        "                    nb = json.load(open(os.path.join(d, f)))\n"
        "                    code = [''.join(c['source']) for c in nb['cells'] if c['cell_type'] == 'code']\n"
        "                    if any('# SOLUTION' in x or 'axes = {' in x for x in code):\n"
        "                        for x in code:\n"
        "                            exec(x, globals())\n"
        "                except Exception:\n"
        "                    pass\n"), 0),
    "rewrite_the_tests": ("blank", "first", (
        "import pathlib\n"
        "from launchlab.core import paths\n"
        "for rel, text in (('lab_solutions/lab_tests.py', 'def score(a, r): return {}\\n'),\n"
        "                  ('launchlab/sections/s09_lab/lab.py', 'raise SystemExit\\n'),\n"
        "                  ('data/recordings/lab.json', '{}')):\n"
        "    try:\n"
        "        (paths.ROOT / rel).write_text(text)\n"
        "    except OSError:\n"
        "        pass\n"), 0),
    "hang_in_step_5": ("master", "hang", "import time\nwhile True:\n    time.sleep(1)\n", 18),
    "no_otter_metadata": ("master", "meta", "", 20),
    "pasted_values": ("blank", "paste", "", 20),
}


CHEATING = ("patch_the_grader", "patch_the_library", "read_the_instructors_files", "always_equal_objects",
            "read_other_submissions", "rewrite_the_tests")


def _round4(v):
    """A value as a learner copies it from the printout: floats to 4 significant figures."""
    if isinstance(v, float):
        return float(f"{v:.4g}")
    if isinstance(v, list):
        return [_round4(x) for x in v]
    if isinstance(v, dict):
        return {k: _round4(x) for k, x in v.items()}
    return v


def pasted_answers(ref: dict) -> str:
    """Answers worked out right and typed in as literals, floats to 4 significant figures (from the reference
    values: what a learner who did each step correctly prints)."""
    offender = ref["ranking"][0]
    d = ref["diagnoses"][offender]
    table = [{k: r[k] for k in ("kernel", "grid", "block", "calls", "ms_per_token", "occupancy", "wave_fill")}
             for r in ref["table"]]
    values = {"table": table, "flagged": ref["flagged"], "ranking": ref["ranking"], "offender": offender,
              "floor_us": d["floor_us"], "measured_us": d["measured_us"], "ratio": d["ratio"],
              "spread_pct": d["spread_pct"], "diagnosis": "starvation", "ruled_out": ["contention", "arithmetic"],
              "axes": ref["axes"], "offender_fails": "no_cross_block_reduction", "reps_main": ref["reps_main"],
              "reps_fix": ref["reps_fix"], "gain_ms": ref["gain_ms"], "spread_ms": ref["spread_ms"],
              "verdict": ref["verdict"], "claim": "bit-identical", "evidence": "cmp",
              "depths": ref["identical_depths"], "head_sites": ref["head_sites"],
              "fine_site": "kernels/decode.py step()  grid = (c.kda_heads,)",     # as notebook 05 prints it
              "largest_measured": max(ref["gains"], key=ref["gains"].get), "why_differ": "upper bound"}
    return "".join(f"{k} = {_round4(v)!r}\n" for k, v in values.items())


def make_cheat(name: str, blank: Path, master: Path, out: Path, ref: dict | None = None) -> Path:
    """A submission of CHEATS[name], written to `out`."""
    base, where, code, _ = CHEATS[name]
    nb = json.loads(Path(blank if base == "blank" else master).read_text())
    cells = nb["cells"]
    new = {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": code}
    if where == "first":
        i = next(k for k, c in enumerate(cells) if "print(banner(" in "".join(c["source"]))
        cells.insert(i + 1, new)
    elif where in ("last", "paste"):
        if where == "paste":
            new["source"] = pasted_answers(ref)
        i = next(k for k, c in enumerate(cells) if "explorers.LabSweep" in "".join(c["source"]))
        cells.insert(i, new)
    elif where == "hang":
        c = next(c for c in cells if "axes = {" in "".join(c["source"]))
        c["source"] = code + "".join(c["source"])
    elif where == "meta":
        nb["metadata"].pop("otter", None)
    out.write_text(json.dumps(nb))
    return out


def make_fixture(solutions: Path, name: str, out: Path) -> Path:
    """A wrong submission: the solutions notebook with one line replaced (FIXTURES[name])."""
    old, new, _ = FIXTURES[name]
    nb = json.loads(Path(solutions).read_text())
    hits = 0
    for c in nb["cells"]:
        src = "".join(c["source"])
        if old in src:
            c["source"] = src.replace(old, new)
            hits += 1
    if hits != 1:
        raise FixtureError(f"fixture {name}: {hits} cells hold {old!r}, expected exactly one")
    out.write_text(json.dumps(nb))
    return out
