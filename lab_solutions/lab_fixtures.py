"""The grader's own test submissions (instructor side, never in the learner's release: they hold solution
lines): FIXTURES, wrong answers that must lose exactly their points; CHEATS, submissions that try to cheat
(each must score 0) and hard honest cases; and ATTACKS (issue 37), submissions that try to get out of the
sandbox, take the grader down, hang it, flood it, starve their neighbours or score without knowledge, each with
what it deserves and the status its row must carry, graded as root beside honest neighbours (NEIGHBOURS).
launchlab.faces.grading loads this file from the instructor's tree for its tests and `grade --benchmark`."""
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
    # steps 6-7, the learner's own fix: each way of getting it wrong, caught by the grader's re-run
    "plan_misses_elements": (
        "grid = -(-n // (block * ept))  # SOLUTION",
        "grid = n // (block * ept)          # whole blocks: exact at 7,168", {"q6": 1}),
    "plan_writes_out_of_bounds": (
        "ept = 1  # SOLUTION", "ept = 2                             # two elements a thread, whatever n", {"q6": 1}),
    "bytes_move_claimed_identical": (
        'arms = {"A": {"LAUNCHLAB_LAB_ADD": "1"}, "B": {"LAUNCHLAB_LAB_ADD": "0"}}  # SOLUTION',
        'arms = {"A": {"LAUNCHLAB_LAB_ADD": "1", "LAUNCHLAB_MLA_FLOOR": "derived"},   # and the split, while at it\n'
        '        "B": {"LAUNCHLAB_LAB_ADD": "0"}}', {"q6": 3, "q7": 1}),     # §6: two things changed
    "gate_does_not_switch": (
        'arms = {"A": {"LAUNCHLAB_LAB_ADD": "1"}, "B": {"LAUNCHLAB_LAB_ADD": "0"}}  # SOLUTION',
        'arms = {"A": {"LAUNCHLAB_LAB_ADD": "1"}, "B": {"LAUNCHLAB_LAB_ADD": "1"}}   # copied A\'s line',
        {"q6": 3, "q7": 1}),                                    # §6: nothing changed; §7: cmp of one config
    "abba_not_interleaved": (
        'sequence = "ABBAAB"  # SOLUTION', 'sequence = "AAABBB"                 # all of A, then all of B', {"q6": 1}),
    "hang_on_the_gpu": (
        "fix.use(plan)\nprint(fix.describe(plan))",
        "fix.use(plan)\nprint(fix.describe(plan))\n"
        "import cupy as cp                   # a last check of my own, on the GPU\n"
        "cp.RawKernel(r'extern \"C\" __global__ void spin() { long long t = clock64(); '\n"
        "             r'while (clock64() - t < 120000000000LL) {} }', 'spin')((1,), (1,), ())\n"
        "cp.cuda.Device().synchronize()", {}),
}
# The public check of steps 6-7 (launchlab.sections.s09_lab.fix.problems6 / problems7, the notebook's grader.check)
# tried on each wrong fix above as the learner's cells would hand it over -- (plan, arms, sequence, depths) -- and
# on two more the issue found: the arms swapped and an alternating ABABAB. Every wrong one must be refused before
# grading; the right one must pass (summary --json: hands.public_check_catches of hands.public_check_cases).
_A1, _B0 = {"LAUNCHLAB_LAB_ADD": "1"}, {"LAUNCHLAB_LAB_ADD": "0"}
_RIGHT = (lambda n: (-(-n // 32), 32, 1), {"A": _A1, "B": _B0}, "ABBAAB", [2048, 131072])
PUBLIC_CASES = {
    "right": _RIGHT,
    "plan_misses_elements": ((lambda n: (n // 32, 32, 1)),) + _RIGHT[1:],
    "plan_writes_out_of_bounds": ((lambda n: (-(-n // 32), 32, 2)),) + _RIGHT[1:],
    "gate_does_not_switch": (_RIGHT[0], {"A": _A1, "B": dict(_A1)}, "ABBAAB", [2048, 131072]),
    "bytes_move_claimed_identical": (_RIGHT[0], {"A": dict(_A1, LAUNCHLAB_MLA_FLOOR="derived"), "B": _B0}, "ABBAAB",
                                     [2048, 131072]),
    "abba_not_interleaved": _RIGHT[:2] + ("AAABBB", [2048, 131072]),
    "abab_alternating": _RIGHT[:2] + ("ABABAB", [2048, 131072]),
    "arms_swapped": (_RIGHT[0], {"A": _B0, "B": _A1}, "ABBAAB", [2048, 131072]),
    "one_depth": _RIGHT[:3] + ([131072],),
}


# What each fixture loses where the grader re-runs it on a GPU (`grade --gpu`): the same, but for the cell that
# spins the GPU, which a machine without one never reaches (its import or its launch raises) -- on the GPU the
# re-run is stopped at its limit and the GPU's part of step 6 scores 0.
GPU_FIXTURES = {"right": {}, "plan_misses_elements": {"q6": 1}, "plan_writes_out_of_bounds": {"q6": 1},
                "bytes_move_claimed_identical": {"q6": 3, "q7": 1}, "gate_does_not_switch": {"q6": 3, "q7": 1},
                "abba_not_interleaved": {"q6": 1}, "hang_on_the_gpu": {"q6": 2}}


# ------------------------------------------------------------------ submissions that try to cheat, and hard cases
# Each: the notebook it starts from ("blank": the learner copy, "master": the solutions), where its code goes
# ("first": right after the banner cell, "last": after every answer, "meta": no code, otter's metadata dropped;
# "hang": prepended to step 5's cell), the code, and the total it deserves out of 20. The first six cheat: none
# knows an answer, so anything above 0 is the grader fooled (summary --json: 09.cheat_max_score_pct).
_NAMES = ("table", "flagged", "ranking_by_occupancy", "ranking", "offender", "moved_up", "why_order_changes", "floor_us", "measured_us", "ratio", "spread_pct", "diagnosis",
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
    "pasted_values": ("blank", "paste", "", 16),      # steps 6-7 are code the grader re-runs: typed values are not
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
    values = {"table": table, "flagged": ref["flagged"], "ranking_by_occupancy": ref["ranking_by_occupancy"],
              "ranking": ref["ranking"], "offender": offender, "moved_up": ref["moved_up"],
              "why_order_changes": "several blocks per SM",
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
    _replace_once(nb, old, new, f"fixture {name}")
    out.write_text(json.dumps(nb))
    return out


# ------------------------------------------------------------------ attacks (issue 37): run as root, beside honest work
# Each: what it starts from ("blank", "master", or "file": a file that is not a plain notebook), where its code
# goes (a list of (place, code): "first" after the banner, "last" before the explorers, "end" after everything,
# "step8" right under step 8's heading) or, for a file, what file it is; the total it deserves out of 20; and the
# status its row must start with (or one of them: the busy neighbour starves itself, its own status may be a
# timeout; what is tried is the honest submission beside it). None of them knows an answer: what it deserves is what its honest part earns.
# An attack that wrote anywhere outside its sandbox leaves a file named MARKER there (the benchmark looks).
MARKER = "launchlab-attack-marker"

_ESCAPE = (
    "import os, subprocess, sys\n"
    "from launchlab.core import paths\n"
    "_targets = [str(paths.ROOT), str(paths.ROOT / 'launchlab'), str(paths.ROOT / 'launchlab' / 'faces'), '/usr',\n"
    "            '/usr/bin', '/etc', sys.prefix, os.path.dirname(os.path.realpath(sys.executable)), '/', '/dev']\n"
    "for _t in _targets:                           # remount what is read-only, then write where it was\n"
    "    subprocess.run(['mount', '-o', 'remount,rw,bind', _t], capture_output=True)\n"
    "    subprocess.run(['mount', '--bind', '/tmp', _t], capture_output=True)\n"
    "    try:\n"
    f"        open(os.path.join(_t, {MARKER!r}), 'w').write('escaped')\n"
    "    except OSError:\n"
    "        pass\n"
    "for _rel, _text in (('launchlab/faces/collect.py', 'raise SystemExit\\n'),\n"
    "                    ('launchlab/__init__.py', 'import os; os.system(\"id > /tmp/pwned\")\\n'),\n"
    "                    ('lab_solutions/lab_tests.py', 'def score(a, r): return {}\\n')):\n"
    "    try:\n"
    "        with open(paths.ROOT / _rel, 'a') as _f:\n"
    "            _f.write(_text)\n"
    "    except OSError:\n"
    "        pass\n")

_CAPABILITIES = (
    "import ctypes, os, subprocess\n"
    "from launchlab.core import paths\n"
    "for _f in (lambda: os.setuid(0), lambda: os.setgid(0), lambda: os.setgroups([0])):\n"
    "    try:\n"
    "        _f()\n"
    "    except OSError:\n"
    "        pass\n"
    "_libc = ctypes.CDLL(None, use_errno=True)\n"
    "_libc.unshare(0x10000000 | 0x00020000)        # CLONE_NEWUSER | CLONE_NEWNS: capabilities in a new namespace\n"
    "subprocess.run(['unshare', '-Ur', 'sh', '-c', 'mount -o remount,rw,bind %s && echo x >> %s/__init__.py'\n"
    "                % (paths.ROOT / 'launchlab', paths.ROOT / 'launchlab')], capture_output=True)\n"
    "subprocess.run(['sh', '-c', 'echo 1 > /proc/sys/kernel/sysrq; chmod 777 /usr/bin; chown 0 /tmp'],\n"
    "               capture_output=True)\n")

_FORGE = (
    "import os\n"
    "_lines = [b'[1, 2, 3]\\n', b'{\"answers\": [1]}\\n', b'\"a string\"\\n', b'\\xff\\xfe not utf-8\\n',\n"
    "          b'{\"answers\": {\"ranking\": {\"value\": ' + b'[' * 200000 + b']' * 200000 + b'}}}\\n',\n"
    "          b'{\"answers\": {\"table\": 5, \"ratio\": {\"value\": 1e308}, \"offender\": {\"__missing__\": [1]}},'\n"
    "          b' \"events\": \"x\", \"final\": true}\\n',\n"
    "          b'{\"answers\": {\"x\": {\"value\": 1}}, \"events\": [1, {\"step\": \"q1\", \"error\": \"=cmd\",'\n"
    "          b' \"message\": \"' + b'A' * 100000 + b'\"}], \"final\": true}\\n']\n"
    "for _pid in {os.getppid(), os.getpid()}:       # the collector's pipes: the answers channel among them\n"
    "    for _fd in os.listdir(f'/proc/{_pid}/fd'):\n"
    "        try:\n"
    "            if os.readlink(f'/proc/{_pid}/fd/{_fd}').startswith('pipe:'):\n"
    "                _w = os.open(f'/proc/{_pid}/fd/{_fd}', os.O_WRONLY | os.O_NONBLOCK)\n"
    "                for _l in _lines:\n"
    "                    try:\n"
    "                        os.write(_w, _l)\n"
    "                    except OSError:\n"
    "                        pass\n"
    "                os.close(_w)\n"
    "        except OSError:\n"
    "            pass\n")

_ANSWERS_FILE = (
    "import os\n"
    "for _p in ('answers.json', '/tmp/work/answers.json', '/tmp/answers.json'):\n"
    "    try:\n"
    "        os.mkdir(_p)\n"
    "    except OSError:\n"
    "        pass\n"
    "for _p, _to in (('answers2.json', '/dev/zero'), ('/tmp/work/out.json', '/dev/zero'), ('grades.csv', '/etc/shadow'),\n"
    "                ('submission.ipynb.json', '/proc/self/mem')):\n"
    "    try:\n"
    "        os.symlink(_to, _p)\n"
    "    except OSError:\n"
    "        pass\n")

_FLOOD = (
    "import os\n"
    "_chunk = b'x' * (1 << 20)\n"
    "_fd = os.open(f'/proc/{os.getppid()}/fd/2', os.O_WRONLY)   # the grader's end: the collector's stderr\n"
    "for _ in range(1024):                          # 1 GiB\n"
    "    os.write(_fd, _chunk)\n"
    "os.close(_fd)\n")

_ZERO = (
    "# a notebook built without knowing the lab: every answer in its form, none of its content\n"
    "table = [{'kernel': 'made_up', 'grid': '(1,)', 'block': 256, 'calls': 1729, 'ms_per_token': 1.0,\n"
    "          'occupancy': 0.5, 'wave_fill': 0.5}]\n"
    "flagged = []\n"
    "ranking = ['made_up:kernel']\n"
    "offender = 'made_up:kernel'\n"
    "floor_us, measured_us, ratio, spread_pct = 1.0, 2.0, 2.0, 1.0\n"
    "diagnosis, ruled_out = 'contention', ['starvation']\n"
    "axes = {'made_up': {'no_cross_block_reduction': True}}\n"
    "offender_fails = 'layout_unchanged'\n"
    "reps_main = reps_fix = [None] * 3\n"
    "gain_ms, spread_ms, verdict = None, None, 'faster'\n"
    "claim, evidence, depths = 'not bit-identical', 'tolerance', [1, 2]\n"
    "head_sites = ['made_up.py:f grid=(n,)']\n"
    "fine_site = 'made_up.py:f grid=(n,)'\n"
    "largest_measured, why_differ = 'MADE_UP', 'noise'\n")

_SLOW_TO_CHECK = (
    "# answers built to make the checks slow: sites a regex backtracks on, a megabyte string, 100,000 keys\n"
    "head_sites = ['a' * 60000 + '.p', 'kernels/decode.py' + ' grid' * 12000] + ['x.py:f grid=(n,)'] * 5000\n"
    "fine_site = 'k/' * 500000 + '.py'\n"
    "ranking = ['k'] * 100000\n"
    "offender = 'k' * 100000\n"
    "table = [{'kernel': 'k' * 100, 'grid': [1] * 100, 'block': 1, 'calls': 1, 'ms_per_token': 1.0}] * 1000\n")

_MEMORY = (
    "_hog = []\n"
    "try:\n"
    "    for _ in range(48):                        # 12 GiB, every page touched\n"
    "        _hog.append(b'\\x01' * (256 << 20))\n"
    "except MemoryError:\n"
    "    pass\n")

_FILL = (
    "import os\n"
    "for _d in ('/tmp', '/tmp/work', '/dev/shm', os.path.expanduser('~'), '.'):\n"
    "    try:\n"
    "        with open(os.path.join(_d, 'fill.bin'), 'wb') as _f:\n"
    "            for _ in range(2560):               # 2.5 GiB each\n"
    "                _f.write(b'\\0' * (1 << 20))\n"
    "    except OSError:\n"
    "        pass\n")

_PROCESSES = (
    "import os, time\n"
    "_n = 0\n"
    "for _ in range(3000):                          # 3,000 processes, each asleep for a minute\n"
    "    try:\n"
    "        _pid = os.fork()\n"
    "    except OSError:\n"
    "        break\n"
    "    if _pid == 0:\n"
    "        time.sleep(60)\n"
    "        os._exit(0)\n"
    "    _n += 1\n"
    "print('forked', _n)\n")

_BUSY = (
    "import subprocess, sys\n"
    "_busy = [subprocess.Popen([sys.executable, '-c', 'while True: pass']) for _ in range(40)]\n")


# issue 56: the grader's own reads of what a learner wrote -- quadratic-regex food, a flood only the re-run sees,
# and text built to drive the instructor's terminal
_QUADRATIC_LINE = (
    "import os\n"
    "_line = b'{\"answers\": \"' + b'\\\\\"' * 600000          # 1.2 MB, never closed: a backtracking scan's worst\n"
    "_argv = open(f'/proc/{os.getppid()}/cmdline', 'rb').read().split(b'\\0')\n"
    "_fd = int(_argv[_argv.index(b'--answers-fd') + 1])  # the collector's answers channel, by its own argv\n"
    "_w = os.open(f'/proc/{os.getppid()}/fd/{_fd}', os.O_WRONLY)\n"
    "os.write(_w, b'\\n' + _line)\n"
    "os.close(_w)\n")

_RERUN_FLOOD = (
    "import sys\n"
    "if sys.argv[0].endswith('rerun_harness.py'):   # only in the grader's re-run of steps 6-7: 1 GiB to its output\n"
    "    for _ in range(1024):\n"
    "        sys.stdout.write('x' * (1 << 20))\n")

_TERMINAL_STATUS = (
    "import os\n"
    "os.write(1, b'\\n\\x1b]0;owned\\x07\\x1b[2J\\x1b[Hall submissions graded 20/20\\r\\n')   # the collector's output\n"
    "os.kill(os.getppid(), 9)                        # and the collector gone: this line becomes the row's status\n")

TERMINAL_NAME = "\x1b[1A\x1b[2K\rblank,20,20,ok\x1b]0;pwned\x07\u202e"


def _asleep(seconds: float) -> str:
    return f"import time\ntime.sleep({seconds:.1f})\n"


ATTACKS = {
    # get out of the sandbox, or take its privileges
    "remount_and_rewrite_the_course": ("blank", [("first", _ESCAPE)], 0, "ok"),
    "regain_capabilities": ("blank", [("first", _CAPABILITIES)], 0, "ok"),
    # take the grader down, or hang it
    "forge_the_answers_channel": ("blank", [("last", _FORGE)], 0, "ok"),
    "replace_the_answers_file": ("blank", [("last", _ANSWERS_FILE)], 0, "ok"),
    "flood_the_output_1_gib": ("master", [("end", _FLOOD)], 20, "ok"),
    "nested_200000_deep": ("file", "nested", 0, "not a notebook"),
    # files that are not a submission
    "symlink_to_the_master": ("file", "symlink-master-absolute", 0, "refused: a symbolic link"),
    "relative_symlink_to_the_master": ("file", "symlink-master-relative", 0, "refused: a symbolic link"),
    "symlink_to_a_neighbour": ("file", "symlink-neighbour", 0, "refused: a symbolic link"),
    "symlink_to_dev_zero": ("file", "symlink-dev-zero", 0, "refused: a symbolic link"),
    "fifo": ("file", "fifo", 0, "refused: a FIFO"),
    "hard_link_to_elsewhere": ("file", "hard-link", 0, "refused: a hard link"),
    "oversized_40_mib": ("file", "oversized", 0, "refused: "),
    "spreadsheet_formula_name": ("master", [], 20, "ok"),
    # points without knowledge
    "zero_knowledge": ("blank", [("last", _ZERO)], 0, "ok"),
    "slow_to_check_answers": ("blank", [("last", _SLOW_TO_CHECK)], 0, "ok"),
    # resources
    "memory_hog_12_gib": ("master", [("end", _MEMORY)], 20, "ok"),
    "fill_tmp_shm_and_home": ("master", [("end", _FILL)], 20, "ok"),
    "process_flood_3000": ("master", [("end", _PROCESSES)], 20, "ok"),
    "busy_neighbour_40_processes": ("blank", [("first", _BUSY), ("end", "sleeping")], 0, ("ok", "timeout")),
    "sleeping_cells_past_the_total": ("master", [("step8", "sleeping past the total")], 16, "timeout"),
    # issue 56: the grader's own reads of learner bytes, and its terminal
    "quadratic_string_notebook_8_mib": ("file", "quadratic-string", 0, "not a notebook"),
    "quadratic_answers_line": ("master", [("last", _QUADRATIC_LINE)], 20, "ok"),
    "newline_cell_100000": ("master", [("last", "\n" * 100000)], 20, "ok"),
    "rerun_output_flood_1_gib": ("master", [("step6", _RERUN_FLOOD)], 20, "ok"),
    "terminal_escapes_in_the_name": ("master", [], 20, "ok"),
    "terminal_escapes_in_the_status": ("blank", [("first", _TERMINAL_STATUS)], 0, "the notebook could not be run"),
}
FORMULA_NAME = '=HYPERLINK("mailto:x@example.com","open"),1'
# the honest submissions graded beside the attacks, each placed next to one that takes a machine's resources
NEIGHBOURS = {"honest_master": 20, "honest_blank": 0, "honest_median_without_spread": 19}
# and beside every other attack, the master (issue 56: graded two at a time, an honest neighbour loses nothing)
NEIGHBOURS.update({f"honest_beside_{k}": 20 for k in ATTACKS
                   if k not in ("busy_neighbour_40_processes", "memory_hog_12_gib", "process_flood_3000")})


def attack_order() -> list[str]:
    """The attacks and the honest neighbours in the order they are graded (two at a time: every attack has an
    honest submission right beside it; each of the three resource attacks one of its own kind)."""
    order = []
    for k in ATTACKS:
        if k not in ("busy_neighbour_40_processes", "memory_hog_12_gib", "process_flood_3000"):
            order += [k, f"honest_beside_{k}"]
    return (["busy_neighbour_40_processes", "honest_master", "memory_hog_12_gib", "honest_median_without_spread",
             "process_flood_3000", "honest_blank"] + order)


def attack_file_name(kind: str, i: int) -> str:
    if kind == "terminal_escapes_in_the_name":
        return f"{TERMINAL_NAME}.ipynb"
    return f"{FORMULA_NAME}.ipynb" if kind == "spreadsheet_formula_name" else f"a{i:02d}_{kind}.ipynb"


def _with_cells(nb: dict, cells: list, cell_timeout: float, total_timeout: float) -> dict:
    out = nb["cells"]
    for where, code in cells:
        if code == "sleeping":
            code = _asleep(0.8 * cell_timeout)
        if code == "sleeping past the total":        # enough cells, each under the cell limit, to pass the total
            n = int(total_timeout / (0.8 * cell_timeout)) + 2
            new = [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
                    "source": _asleep(0.8 * cell_timeout)} for _ in range(n)]
        else:
            new = [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": code}]
        if where == "first":
            i = next(k for k, c in enumerate(out) if "print(banner(" in "".join(c["source"])) + 1
        elif where == "last":
            i = next(k for k, c in enumerate(out) if "explorers.LabSweep" in "".join(c["source"]))
        elif where in ("step6", "step8"):
            i = next(k for k, c in enumerate(out)
                     if "".join(c["source"]).lstrip().startswith(f"## Step {where[-1]}")) + 1
        else:
            i = len(out)
        out[i:i] = new
    return nb


def make_attack(kind: str, i: int, folder: Path, blank: Path, master: Path, elsewhere: Path,
                cell_timeout: float = 20, total_timeout: float = 120) -> Path:
    """The attack (or honest neighbour) `kind` as a submission in `folder`; `elsewhere` is a folder outside it
    (for the hard link). The master's own file is never touched: links point to it, nothing writes it."""
    import os
    folder, elsewhere = Path(folder), Path(elsewhere)
    dst = folder / attack_file_name(kind, i)
    if kind in NEIGHBOURS:
        if kind == "honest_master" or kind.startswith("honest_beside_"):
            dst.write_text(Path(master).read_text())
        elif kind == "honest_blank":
            dst.write_text(Path(blank).read_text())
        else:
            make_fixture(master, "median_without_spread", dst)
        return dst
    base, how, _, _ = ATTACKS[kind]
    if base != "file":
        nb = json.loads(Path(blank if base == "blank" else master).read_text())
        dst.write_text(json.dumps(_with_cells(nb, how, cell_timeout, total_timeout)))
        return dst
    if how == "nested":
        dst.write_bytes(b"[" * 200000 + b"]" * 200000)
    elif how == "quadratic-string":                 # an object, 1 deep, whose one string never closes: 8 MiB
        dst.write_bytes(b'{"cells": [], "x": "' + b'\\"' * (4 << 20))
    elif how == "symlink-master-absolute":
        os.symlink(Path(master).resolve(), dst)
    elif how == "symlink-master-relative":
        os.symlink(os.path.relpath(Path(master).resolve(), folder.resolve()), dst)
    elif how == "symlink-neighbour":
        os.symlink(attack_file_name("honest_master", attack_order().index("honest_master")), dst)
    elif how == "symlink-dev-zero":
        os.symlink("/dev/zero", dst)
    elif how == "fifo":
        os.mkfifo(dst)
    elif how == "hard-link":
        elsewhere.mkdir(parents=True, exist_ok=True)
        src = elsewhere / "master_copy.ipynb"
        src.write_text(Path(master).read_text())
        os.link(src, dst)
    elif how == "oversized":
        nb = json.loads(Path(master).read_text())
        nb["cells"][0].setdefault("metadata", {})["padding"] = "x" * (40 << 20)
        dst.write_text(json.dumps(nb))
    return dst


def make_attacks(folder: Path, blank: Path, master: Path, elsewhere: Path, cell_timeout: float = 20,
                 total_timeout: float = 120, skip: tuple = ()) -> dict:
    """Every attack and honest neighbour in `folder` (but those in `skip`): {learner name: (kind, deserved total,
    status prefix)}."""
    out = {}
    for i, kind in enumerate(attack_order()):
        if kind in skip:
            continue
        p = make_attack(kind, i, folder, blank, master, elsewhere, cell_timeout, total_timeout)
        learner = p.name[:-len(".ipynb")]
        out[learner] = (kind, NEIGHBOURS[kind], "ok") if kind in NEIGHBOURS else (kind, ATTACKS[kind][2],
                                                                                 ATTACKS[kind][3])
    return out


# ------------------------------------------------------------------ honest variants (issue 56): full marks, each
# The master's solutions written the ways learners write them -- saved by an older Jupyter, a constant or a helper
# set in an earlier step and used in step 6, the plan as a lambda, cells of their own added, cells run out of
# order while working -- each deserving 20 of 20: the grader re-runs the notebook as it runs, top to bottom.
def _replace_once(nb: dict, old: str, new: str, what: str) -> None:
    """`old` replaced by `new` in the one cell that holds it (FixtureError, naming `what`, if not exactly one)."""
    hits = 0
    for c in nb["cells"]:
        src = "".join(c["source"])
        if old in src:
            c["source"] = src.replace(old, new)
            hits += 1
    if hits != 1:
        raise FixtureError(f"{what}: {hits} cells hold {old!r}, expected exactly one")


_STEP5 = 'offender_fails = "no_cross_block_reduction"  # SOLUTION'
_PLAN = ("def plan(n):\n    # threads per block, elements each thread adds, and the blocks that cover n\n"
         "    block = 32  # SOLUTION\n    ept = 1  # SOLUTION\n    grid = -(-n // (block * ept))  # SOLUTION\n"
         "    return grid, block, ept\n")
HONEST = {
    "nbformat_3": "the master saved as nbformat 3 (worksheets, `input`, `prompt_number`)",
    "constant_from_step_5": "block = BLOCK, a constant set in step 5's cell",
    "helper_from_step_5": "the grid from a helper function defined in step 5's cell",
    "plan_as_lambda": "plan = lambda n: (...), no def",
    "extra_cells": "the learner's own markdown and code cells between the steps (notes, a scratch check)",
    "executed_out_of_order": "cells run out of order while working (execution counts scrambled), in order top to "
                             "bottom",
}


def _cell(kind: str, source: str) -> dict:
    c = {"cell_type": kind, "metadata": {}, "source": source}
    if kind == "code":
        c.update(execution_count=None, outputs=[])
    return c


def make_honest(solutions: Path, name: str, out: Path) -> Path:
    """The honest variant `name` (HONEST) of the solutions notebook, written to `out`."""
    nb = json.loads(Path(solutions).read_text())
    what = f"honest variant {name}"
    if name == "nbformat_3":
        import nbformat
        book = nbformat.convert(nbformat.reads(json.dumps(nb), as_version=4), 3)
        out.write_text(nbformat.writes(book, version=3))
        return out
    if name == "constant_from_step_5":
        _replace_once(nb, _STEP5, _STEP5 + "\nBLOCK = 32                 # threads per block for my step-6 fix", what)
        _replace_once(nb, "    block = 32  # SOLUTION\n", "    block = BLOCK\n", what)
    elif name == "helper_from_step_5":
        _replace_once(nb, _STEP5, _STEP5 + "\n\n\ndef blocks_for(n, block, ept):\n"
                                           "    return -(-n // (block * ept))     # enough blocks to cover n\n", what)
        _replace_once(nb, "    grid = -(-n // (block * ept))  # SOLUTION\n", "    grid = blocks_for(n, block, ept)\n",
                      what)
    elif name == "plan_as_lambda":
        _replace_once(nb, _PLAN, "plan = lambda n: (-(-n // 32), 32, 1)      # (grid, block, ept)\n", what)
    elif name == "extra_cells":
        cells = nb["cells"]
        for anchor, new in (("## Step 6", [_cell("markdown", "My notes: one thread an element, 32 a block."),
                                           _cell("code", "import math\nprint(math.ceil(7168 / 32), 'blocks')")]),
                            ("## Step 3", [_cell("code", "print(len(table), 'launch shapes')")]),
                            ("## Step 8", [_cell("code", "checked = [plan(n) for n in (1, 7168)]\nprint(checked)")])):
            i = next(k for k, c in enumerate(cells) if "".join(c["source"]).lstrip().startswith(anchor))
            cells[i:i] = new
    elif name == "executed_out_of_order":
        ran = [cell for cell in nb["cells"] if cell["cell_type"] == "code"]
        for k, cell in enumerate(ran):                   # the last cell run first, and so on up
            cell["execution_count"] = len(ran) - k + 40
    else:
        raise FixtureError(f"no honest variant {name!r}")
    out.write_text(json.dumps(nb))
    return out
