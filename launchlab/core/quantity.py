"""Quantities: a headline number printed in a notebook under its name -- the summary's key -- with one unit and
one format everywhere.

    quantity.say("Main's kernel sits {r} off its floor.", r=quantity.of("03.main_kernel_ratio", g.ratio))

`of(key, value)` pairs a value (computed by the notebook from its data: live now, or the recording) with its
key; `say` shows the sentence as Markdown and lists the quantities it printed in the output's metadata
(`launchlab.quantities`: {key: the text printed}). launchlab.faces.reading collects those from every committed
notebook, so a quantity printed in two places with two values is found by a test, not by a learner; the
summary's `course.quantities_with_two_values` counts them.

Where two numbers differ on purpose (hot vs cold, in the step vs alone, ctx 131,072 vs 131,073) they are two
quantities with two keys, and the sentence says which is which. When two keys measure the same thing with two
instruments or in two runs (main's step as a plain graph and inside a 132-SM green context; the derived MLA
split alone and inside the step), they are a GROUP: a group's keys may print different values only where the
second is printed with its reason, `of(key, value, because="...")`. reading counts the group members printed
with another value and no reason (`quantities_drifting_without_why`).

The unit follows the key's suffix: _us µs, _ms ms, _ms_per_token ms/token, _us_per_token µs/token, _pct %, _pct_points percentage
points, _tbs TB/s, _seconds s, _tok_s tok/s, _ratio / _speedup / _x ×, _blocks blocks; anything else prints
bare.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

METADATA_KEY = "launchlab"
KEY = re.compile(r"^[0-9]{2}\.[a-z0-9_]+$|^course\.[a-z0-9_]+$|^lecture\.[a-z0-9_]+$")

# (suffix, unit, format): the first suffix that ends the key wins
UNITS = (("_ms_per_token", " ms/token", "{:.3f}"), ("_us_per_token", " µs/token", "{:.0f}"), ("_pct_points", " percentage points", "{:+.1f}"),
         ("_gain_pct", " %", "{:+.1f}"), ("_pct", " %", "{:.1f}"), ("_us", " µs", "{:.3g}"), ("_ms", " ms", "{:.3f}"),
         ("_tbs", " TB/s", "{:.2f}"), ("_seconds", " s", "{:.1f}"), ("_tok_s", " tok/s", "{:.2f}"),
         ("_ratio", "×", "{:.1f}"), ("_speedup", "×", "{:.2f}"), ("_x", "×", "{:.2f}"), ("_blocks", " blocks", "{:,d}"),
         ("_ctx", "", "{:,d}"))


# the same thing measured twice: {what it is: its keys}. A key belongs to at most one group.
GROUPS = {
    "main's decode step at ctx 131,072, ms per token": ("06.main_step_ms", "05.main_step_green_context_ms"),
    "the derived MLA split at ctx 131,072, µs per call": ("04.split_derived_alone_us", "06.split_in_step_fixed_us"),
}


class QuantityError(ValueError):
    pass


def group_of(key: str) -> str | None:
    return next((g for g, keys in GROUPS.items() if key in keys), None)


def unit_of(key: str) -> tuple[str, str]:
    for suffix, unit, fmt in UNITS:
        if key.endswith(suffix):
            return unit, fmt
    return "", "{:.4g}"


@dataclass(frozen=True)
class Quantity:
    key: str
    value: float
    because: str = ""          # why it differs from its group's other figures (GROUPS), said beside it

    @property
    def text(self) -> str:
        unit, fmt = unit_of(self.key)
        v = int(round(self.value)) if fmt.endswith(",d}") else float(self.value)
        body = fmt.format(v)
        return body + unit

    def __str__(self) -> str:
        return self.text

    def __format__(self, spec: str) -> str:
        return self.text


def of(key: str, value, because: str = "") -> Quantity:
    """A value under its summary key (checked: "NN.name", "course.name" or "lecture.name"); `because`: why it
    differs from the other figures of its group (only for a key in GROUPS)."""
    if not isinstance(key, str) or not KEY.fullmatch(key):      # not match: its $ passes a trailing newline
        raise QuantityError(f"{key!r} is not a quantity key: '<section>.<name>' as in summary --json "
                            f"(e.g. '03.main_kernel_ratio'), or 'lecture.<name>' for the lecture's own figures")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(float(value)):
        raise QuantityError(f"{key}: a quantity is a finite number, got {value!r}")
    if because and group_of(key) is None:
        raise QuantityError(f"{key}: `because` explains a difference within a group (quantity.GROUPS); "
                            f"this key is in none")
    return Quantity(key, float(value), str(because))


def say(template: str, **quantities: Quantity):
    """Show one sentence (Markdown) with its quantities filled in, and list them in the output's metadata."""
    for name, q in quantities.items():
        if not isinstance(q, Quantity):
            raise QuantityError(f"{name}: pass quantity.of(key, value), not a bare {type(q).__name__}")
    text = template.format(**quantities)
    meta = {METADATA_KEY: {"quantities": {q.key: q.text for q in quantities.values()}}}
    why = {q.key: q.because for q in quantities.values() if q.because}
    if why:
        meta[METADATA_KEY]["because"] = why
    try:
        from IPython import get_ipython
        from IPython.display import display
        if get_ipython() is not None:
            display({"text/markdown": text, "text/plain": text}, raw=True, metadata=meta)
            return None
    except ImportError:
        pass
    print(text)
    return None
