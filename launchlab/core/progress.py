"""A progress bar for long live sweeps: an ipywidgets bar inside Jupyter, a line on stderr elsewhere."""
from __future__ import annotations

import sys
import time


def _in_notebook() -> bool:
    try:
        from IPython import get_ipython
        ip = get_ipython()
        return ip is not None and ip.__class__.__name__ == "ZMQInteractiveShell"
    except ImportError:
        return False


class Progress:
    def __init__(self, desc: str, total: int | None = None):
        self.desc, self.total, self.t0 = desc, total, time.perf_counter()
        self.bar = None
        self._last = -1
        if _in_notebook():
            import ipywidgets as w
            from IPython.display import display
            self.bar = w.IntProgress(value=0, min=0, max=total or 1, description=desc,
                                     layout=w.Layout(width="60%"))
            display(self.bar)

    def __call__(self, done: int, total: int) -> None:
        if self.bar is not None:
            self.bar.max = total
            self.bar.value = done
            if done == total:
                self.bar.bar_style = "success"
            return
        pct = int(100 * done / total)
        if pct // 10 != self._last // 10 or done == total:
            self._last = pct
            print(f"  {self.desc}: {done}/{total} ({time.perf_counter() - self.t0:.1f} s)", file=sys.stderr,
                  flush=True)
