"""launchlab: the course's instruments for launch geometry on real CUDA kernels.

Five tiers, one folder each; a module imports only from its own tier or the tiers above it in this list, and
nothing imports in a cycle (tests/test_architecture.py keeps both, and the rest of this layout):

core/       the machinery every section shares: live or replay (`mode`, and `door`, the one place they part
            ways), the GPU's limits, occupancy, checked launches, the kernel sources and their compilers,
            timing, timelines, gates, recordings, dumps; and what a section is made of (`section`, the
            manifest; `exercise`, `checks`, `figure`, `explorer`, the scaffolds its parts build on)
kernels/    the kernels' host code, one module per family of kernels/*.cu: its gates, geometry (`plan`),
            launch and numpy reference side by side, and the decode step built from them; no lesson code
audit/      the lab's audit pointed at any program: its launches read from a profiler's record (`launches`:
            torch.profiler's trace, CUPTI's records; `profilers`, the live runs), the lab's table and ranking
            over them (`shapes`), the idle SM-time figure (`figure`), and the CUPTI record of the course's own
            decode step checked against its launch log (`crosscheck`), and step 8 over any source tree (`sites`)
sections/   one folder per lecture section, each with its `manifest.py` beside its lessons (doors), figures,
            explorers, exercises, self-test checks and benches; `sections.FOLDERS` is the registry:
            s00_start, s01_arithmetic, s02_width, s03_starvation, s04_derive, s05_sharding,
            s06_one_binary, s07_bit_identity, s08_reshape, s09_lab, s10_self_check, s11_audit
faces/      what a learner, an instructor or a maintainer touches, reading the sections only through the
            registry: banner, recorder, summary, selftest, bench, exercises, course, badinputs, grading,
            reliability; `python -m launchlab` is the command line
"""
__version__ = "0.1.0"

LAYERS = {
    "core": "the machinery every section shares",
    "kernels": "the kernels' host code: one module per kernel family, and the decode step",
    "audit": "the lab's audit of any program's launches, read from a profiler's record",
    "sections": "one folder per lecture section",
    "faces": "what learners, instructors and maintainers touch",
}

from launchlab.core import refusal as _refusal  # noqa: E402 -- in a notebook, refusals shown as a box

_refusal.in_a_notebook()
