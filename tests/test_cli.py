"""Every subcommand of `python -m launchlab`, run as a learner would run it (a subprocess, exit code and all).

In replay (CI, a laptop) a command either does its job (exit 0) or refuses in one line that says it needs a GPU
(exit 2), never a traceback; bad arguments are refused with exit 2 before anything is written. On a GPU every
`bench` subcommand runs to its end. CASES lists one run per subcommand; a subcommand the parser has and CASES
lacks fails the first test, so a new command cannot arrive untested."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from launchlab import __main__ as cli
from launchlab.core import mode

ROOT = Path(__file__).resolve().parent.parent
GPU = "needs a CUDA GPU"

# subcommand: (arguments, exit code in replay, text the output must hold)
CASES = {
    "env": ([], 0, "MODE: replay"),
    "gates": ([], 0, "LAUNCHLAB_RMS_WIDE"),
    "compile": ([], 0, "kernels/kda_decode.cu"),
    "archs": (["--only", "sm_86"], 0, "sm_86         13           76     True"),
    "show": (["kda_decode", "kda_walk<0>", "--block", "128"], 0, "__global__"),
    "record": (["section08", "--out", "{tmp}/rec"], 2, GPU),
    "check-recordings": ([], 0, "ok     section08"),
    "summary": (["--json"], 0, '"08"'),
    "cmp": (["{tmp}/no-such-dump", "{tmp}/no-such-dump-either"], 2, "no such dump"),
    "badinputs": ([], 0, "refused with the fix named"),
    "selftest": ([], 2, GPU),
    "grade": (["{tmp}"], 2, "no *.ipynb submissions"),
    "assign": (["--check"], 0, "is what otter assign makes of the master"),
    "bench": (["kda"], 2, GPU),
    "course": (["--refresh", "no-such-notebook"], 2, "no notebook's name contains"),
    "release": (["--out", "{tmp}/learner", "--report", "{tmp}/report.json"], 0, "lines of the instructor's material in it: 0"),
    "reading": ([], 0, "exercises whose answer is printed above the question"),
    "sections": ([], 0, "10_self_check"),
    "new-section": (["5", "Bad Name", "a title"], 2, "two digits"),
    "slides": (["--notes", "08_"], 0, "point at: 8,192 outputs"),
    "page": ([], 0, "widest output line"),
    "glossary": ([], 0, "first uses in the notebooks not linked"),
    "site": (["--stage"], 0, "staged 17 pages into build/site-src"),
    "audit": (["--trace", "data/audit/llama.trace.json.gz", "--top", "3"], 0, "44 launch shapes, 202 launches"),
    "refusals": (["--only", "02a_"], 0, "longest refusal: 5 visible lines"),
}


def run(*args, **env):
    e = dict(os.environ, LAUNCHLAB_MODE="replay", **env)
    return subprocess.run([sys.executable, "-m", "launchlab", *args], capture_output=True, text=True, cwd=ROOT,
                          env=e, timeout=300)


def test_every_subcommand_has_a_case():
    assert sorted(cli.subcommands()) == sorted(CASES)


# over 10 s each (an architecture's build, every family compiled, otter assign, the whole summary): make test-slow
SLOW = {"archs", "compile", "assign", "summary"}


@pytest.mark.skipif(mode.is_live(), reason="the replay outcomes; on a GPU test_every_bench_runs_to_its_end")
@pytest.mark.parametrize("cmd", [pytest.param(c, marks=pytest.mark.slow) if c in SLOW else c for c in sorted(CASES)])
def test_each_subcommand_works_or_refuses_in_one_line(cmd, tmp_path):
    args, rc, text = CASES[cmd]
    r = run(cmd, *(a.format(tmp=tmp_path) for a in args))
    out = r.stdout + r.stderr
    assert r.returncode == rc, out[-2000:]
    assert text in out, out[-2000:]
    assert "Traceback" not in out, out[-2000:]
    if rc == 2:
        assert len(r.stderr.strip().splitlines()) == 1, r.stderr          # one line, not a stack
    if cmd == "new-section":
        assert not (ROOT / "launchlab" / "sections" / "s5_Bad Name").exists()


def test_an_unknown_benchmark_lists_the_known_ones():
    r = run("bench", "nope")
    assert r.returncode == 2 and "known: stream, rms, kda, mla, decode, pdl, host" in r.stdout + r.stderr


@pytest.mark.gpu
@pytest.mark.parametrize("what", ["stream", "rms", "kda", "mla", "decode", "pdl", "host"])
def test_every_bench_runs_to_its_end(what):
    p = subprocess.run([sys.executable, "-m", "launchlab", "bench", what], capture_output=True, text=True,
                       cwd=ROOT, timeout=600)
    assert p.returncode == 0, (p.stdout + p.stderr)[-3000:]
