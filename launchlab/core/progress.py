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


class Timed:
    """A progress bar for one long measurement with no steps to count: it fills with the time elapsed against
    what the same measurement took last time (`expected_s`; an unknown one shows elapsed seconds only), and is
    marked done when the block ends. In Jupyter an ipywidgets bar moved by a background thread; elsewhere one
    line on stderr when it starts and one when it ends."""

    def __init__(self, desc: str, expected_s: float | None):
        self.desc, self.expected_s = desc, expected_s
        self.bar = self.label = self._thread = None
        self._stop = None

    def _text(self, elapsed: float) -> str:
        return (f"{elapsed:4.0f} s of ~{self.expected_s:.0f} s (its last live run)" if self.expected_s
                else f"{elapsed:4.0f} s")

    def __enter__(self):
        import threading
        self.t0 = time.perf_counter()
        if not _in_notebook():
            print(f"  measuring {self.desc}" + (f" (~{self.expected_s:.0f} s last time)" if self.expected_s else ""),
                  file=sys.stderr, flush=True)
            return self
        import ipywidgets as w
        from IPython.display import display
        total = max(1.0, 1.1 * (self.expected_s or 60.0))
        self.bar = w.FloatProgress(value=0.0, min=0.0, max=total, description="measuring",
                                   layout=w.Layout(width="40%"))
        self.label = w.Label(f"{self.desc}: {self._text(0)}")
        display(w.HBox([self.bar, self.label]))
        self._stop = threading.Event()

        def tick():
            while not self._stop.wait(0.5):
                el = time.perf_counter() - self.t0
                self.bar.value = min(el, total)
                self.label.value = f"{self.desc}: {self._text(el)}"
        self._thread = threading.Thread(target=tick, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, exc_type, *exc):
        el = time.perf_counter() - self.t0
        if self.bar is None:
            print(f"  measured {self.desc} in {el:.1f} s", file=sys.stderr, flush=True)
            return False
        self._stop.set()
        self._thread.join(timeout=2)
        self.bar.value = self.bar.max
        self.bar.bar_style = "success" if exc_type is None else "danger"
        self.label.value = f"{self.desc}: {'measured' if exc_type is None else 'failed'} in {el:.1f} s"
        return False
