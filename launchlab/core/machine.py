"""Which machine a number was measured on (issue 29): the H200 the course was recorded on, or the GPU a learner
runs it on live.

Live on another GPU (an A100, an L4, an RTX card), two things change, and nothing else:

  every figure is labelled     a matplotlib figure hook (rcParams["figure.hooks"]) writes "measured live on
                               <GPU> (<SMs>, sm_XY)" into the corner of every figure the course draws, so no
                               figure function has to remember to
  the H200 is shown beside it  every section figure drawn from a door's live result (Door.data marks it) is
                               followed by the same figure drawn from the H200's recording, titled so

`install()` does both; the banner calls it in live mode, so every notebook has it from its first cell. On the
H200 itself, and in replay, `other()` is None and nothing is drawn twice. An explorer redraws without the
recorded twin (`alone()`): its slider would otherwise stack one H200 figure per move.
"""
from __future__ import annotations

import contextlib
import functools
import inspect

from launchlab.core import hardware, mode

HOOK = "launchlab.core.machine:figure_hook"
_quiet = [0]


def is_recorded_machine(s: hardware.GPUSpec) -> bool:
    """Whether `s` is the machine the recordings were made on: an H200 with all of its SMs, sm_90."""
    r = hardware.H200
    return "H200" in s.name and s.sm_count == r.sm_count and tuple(s.compute_capability) == r.compute_capability


@functools.cache
def _device() -> hardware.GPUSpec:  # pragma: no mutate block (live only)
    return hardware._properties(0)         # the whole device, whatever slice is entered


def other() -> hardware.GPUSpec | None:
    """The live GPU when it is not the H200 the course was recorded on; None on the H200 and in replay."""
    def live():
        s = _device()
        return None if is_recorded_machine(s) else s
    return mode.choose(live=live, replay=lambda: None)


def label(s: hardware.GPUSpec) -> str:
    cc = f"sm_{s.compute_capability[0]}{s.compute_capability[1]}"
    return f"measured live on {s.name} ({s.sm_count} SMs, {cc}); not the H200 the course was recorded on"


def figure_hook(fig) -> None:
    """matplotlib calls this for every new pyplot figure: label it with the live GPU when that is not the H200."""
    s = other()
    if s is not None:
        fig.text(0.995, 0.003, label(s), ha="right", va="bottom", fontsize=7, color="#8a3b00")


def _door_result(x) -> bool:
    return getattr(x, "_door", None) is not None


def _recorded(x):
    return x._door.recorded() if _door_result(x) else x


def _display(fig) -> None:  # pragma: no mutate block (display)
    from IPython.display import display
    display(fig)


@contextlib.contextmanager
def alone():
    """Figures drawn inside are not followed by the H200's recording (an explorer's redraws)."""
    _quiet[0] += 1
    try:
        yield
    finally:
        _quiet[0] -= 1


def beside(fn):
    """A figure function that, live on another GPU and given a door's live result, also draws the figure from
    the H200's recording and displays it first, titled so; it returns the live figure as before."""
    if getattr(fn, "_beside", False):
        return fn

    @functools.wraps(fn)
    def wrapped(*args, **kwargs):
        fig = fn(*args, **kwargs)
        if _quiet[0] or other() is None:
            return fig
        if not any(_door_result(a) for a in (*args, *kwargs.values())):
            return fig
        with alone():
            rec = fn(*(_recorded(a) for a in args), **{k: _recorded(v) for k, v in kwargs.items()})
        rec.suptitle("the H200's recording, for comparison with the live figure below", fontsize=10, y=1.02)
        _display(rec)
        return fig
    wrapped._beside = True
    return wrapped


def wrap_module(mod) -> int:
    """Wrap every public figure function a section's figures module defines (see beside); how many."""
    n = 0
    for name, f in list(vars(mod).items()):
        if inspect.isfunction(f) and not name.startswith("_") and f.__module__ == mod.__name__:
            setattr(mod, name, beside(f))
            n += 1
    return n


def install(figure_modules=()) -> str:
    """Live on another GPU: the figure hook, and the H200 beside every figure of `figure_modules` (the sections'
    figures modules: the banner passes them from the registry). Returns the banner's line ('' on the H200 and
    in replay, where nothing is installed)."""
    s = other()
    if s is None:
        return ""
    import matplotlib
    hooks = matplotlib.rcParams["figure.hooks"]
    if HOOK not in hooks:
        matplotlib.rcParams["figure.hooks"] = [*hooks, HOOK]
    for mod in figure_modules:
        wrap_module(mod)
    return (f"      {label(s)}: every figure says so in its corner, and each section figure drawn from a live "
            f"result is preceded by the same figure from the H200's recording")
