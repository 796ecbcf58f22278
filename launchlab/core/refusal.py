"""A refusal as a learner meets it in a notebook (issue 58): what is wrong and the rule, in a short styled box,
the traceback one click away, and the kernel still working.

The course refuses bad input with its own ValueErrors, raised before any launch by its own checks: `LaunchError`
and each kernel's (`RMSNormError`, `KDAError`, `MLAError`, `PlanError`, `ContrastError`), the lab's `FixError`,
`SplitError`, `GateError`, `QuantityError`, `SliceError`, `DumpError`, `ReuseError`, `DecodeError`, `AuditError`.
So a refusal is a ValueError whose class a `launchlab` module defines -- no list to keep. In an IPython kernel
(a notebook) `import launchlab` sets IPython's custom exception hook (`InteractiveShell.set_custom_exc`) for
ValueError: a refusal becomes a box headed "refused before anything reached the GPU: <ErrorType>", the message
wrapped at the course's width, one line saying the kernel still works and a collapsed "traceback" (HTML
<details>), then the one-line error every exception ends a cell with; any other ValueError keeps IPython's own
traceback. Both go out through the shell's `_showtraceback`, so the cell ends in an error as before (Run All stops
there; nbclient and nbval see it). The box's text/plain copy (what a console shows, what nbval compares) is the
same lines without the traceback.
"""
from __future__ import annotations

import html
import sys
import traceback

from launchlab.core import width

STYLE = ("border-left: 4px solid #b03a2e; background: #fbeeee; color: #1b1b1b; padding: 0.45em 0.9em; "
         "margin: 0.3em 0; font-size: 0.95em; line-height: 1.45")
KEEPS = "Nothing reached the GPU: the notebook's kernel keeps working. Edit the cell and run it again."


def is_refusal(value: BaseException) -> bool:
    """A ValueError of the course's own: its class (or a base it inherits from, short of ValueError) is defined
    in a launchlab module."""
    if not isinstance(value, ValueError):
        return False
    return any(c.__module__.startswith("launchlab.") for c in type(value).__mro__
               if c is not ValueError and issubclass(c, ValueError))


def lines(etype: type, value: BaseException) -> list[str]:
    """The box as plain lines (no traceback): the heading, the message wrapped, what still holds."""
    msg = str(value).strip() or etype.__name__
    body = [width.fit(part, hang=2) for part in msg.split("\n") if part.strip()]
    return [f"refused before anything reached the GPU: {etype.__name__}"] + "\n".join(body).split("\n") + [KEEPS]


def to_html(etype: type, value: BaseException, tb_text: str) -> str:
    head, *body, keeps = lines(etype, value)
    text = html.escape(" ".join(ln.strip() for ln in body))
    return (f'<div class="launchlab-refusal" style="{STYLE}">'
            f'<div style="font-weight: 600">{html.escape(head)}</div>'
            f'<div>{text}</div>'
            f'<div style="color: #555; font-size: 0.9em">{html.escape(keeps)}</div>'
            f'<details><summary style="cursor: pointer; color: #555; font-size: 0.9em">traceback</summary>'
            f'<pre style="font-size: 0.8em; white-space: pre-wrap">{html.escape(tb_text)}</pre></details></div>')


def handler(shell, etype, value, tb, tb_offset=None):
    """IPython's custom exception hook: a course refusal as the box, then the one-line error; any other ValueError
    as IPython shows it. Both go out through the shell's own `_showtraceback`, so the cell ends in an error as
    every exception's does (Run All stops there, nbclient and nbval see it)."""
    try:
        ours = is_refusal(value)
    except Exception:  # noqa: BLE001 -- never let the display hide the learner's error
        ours = False
    if not ours:
        stb = shell.InteractiveTB.structured_traceback(etype, value, tb, tb_offset=tb_offset)
    else:
        from IPython.display import display
        tb_text = "".join(traceback.format_exception(etype, value, tb))
        display({"text/html": to_html(etype, value, tb_text), "text/plain": "\n".join(lines(etype, value))},
                raw=True)
        stb = [f"{etype.__name__}: refused (said above; its traceback is under 'traceback')"]
    shell._showtraceback(etype, value, stb)
    return stb


def register(shell) -> bool:
    """Set the hook on this IPython shell (once); False where there is no shell to set it on."""
    if shell is None or not hasattr(shell, "set_custom_exc"):
        return False
    if getattr(shell, "_launchlab_refusals", False):
        return True
    shell.set_custom_exc((ValueError,), handler)
    shell._launchlab_refusals = True
    return True




def in_a_notebook() -> bool:
    """Set the hook where `import launchlab` runs inside an IPython kernel; elsewhere (the command line, pytest)
    nothing is changed. IPython is looked up, never imported."""
    ipython = sys.modules.get("IPython")
    return register(ipython.get_ipython() if ipython is not None and hasattr(ipython, "get_ipython") else None)
