"""Progress of fits: a counter of evaluations (:class:`ProgressLine`) that rewrites one line
in a terminal, updates one display in a notebook, and writes whole lines to a file or a pipe.
"""

from __future__ import annotations

import math
import sys
import time
from typing import Any

from laddu_dask.views import on_terminal

__all__ = ["ProgressLine"]


def _in_notebook() -> bool:
    """Whether this process is a Jupyter (IPython) kernel; never imports IPython itself."""
    ipython = sys.modules.get("IPython")  # a kernel has imported it; if not, this is no notebook
    if ipython is None:
        return False
    shell = ipython.get_ipython()
    if shell is None:
        return False
    return getattr(shell, "kernel", None) is not None or "IPKernelApp" in getattr(shell, "config", {})


def _notebook_display(text: str) -> Any:
    """Show ``text`` as a new display in the notebook and return its handle."""
    from IPython.display import display

    return display({"text/plain": text}, raw=True, display_id=True)


class ProgressLine:
    """A fit-evaluation counter.

    In a terminal it rewrites one line (``\\r``) at most every :attr:`interval` seconds; in
    a notebook it updates one display as often. Written to a file or a pipe (standard
    output is no terminal) it writes one whole line per update, at most every
    :attr:`line_interval` seconds. :meth:`finish` shows the final count and value.
    """

    interval = 0.25
    line_interval = 5.0

    def __init__(self, notebook: bool | None = None, terminal: bool | None = None) -> None:
        self.notebook = _in_notebook() if notebook is None else notebook
        self.terminal = on_terminal() if terminal is None else terminal
        self.last = -math.inf
        self.calls = 0
        self._handle: Any = None
        self._width = 0

    def __call__(self, calls: int, value: float) -> None:
        self.calls = calls
        if self.due():
            self.show(f"fit: {calls} evaluations, -2 ln L = {value:.10g}")

    def due(self, final: bool = False) -> bool:
        """Whether an update is to be shown now (the last one always): at most every
        :attr:`interval` seconds in a terminal or notebook, :attr:`line_interval` in a file."""
        now = time.perf_counter()
        every = self.interval if self.notebook or self.terminal else self.line_interval
        if final or now - self.last >= every:
            self.last = now
            return True
        return False

    def show(self, text: str, final: bool = False) -> None:
        """Show ``text`` in place of the last line (``final``: end the line); in a file or a
        pipe, as a line of its own."""
        if self.notebook:
            if self._handle is None:
                self._handle = _notebook_display(text)
            else:
                self._handle.update({"text/plain": text}, raw=True)
            return
        if not self.terminal:
            print(text, flush=True)
            return
        pad = " " * max(0, self._width - len(text))  # blank what a longer line left behind
        self._width = len(text)
        print(f"\r{text}{pad}", end="\n" if final else "", flush=True)

    def finish(self, fval: float | None) -> None:
        """Show the final line: evaluations and the minimum (``None``: the fit stopped)."""
        if fval is None:
            self.show(f"fit: stopped after {self.calls} evaluations", final=True)
        else:
            self.show(f"fit: done, {self.calls} evaluations, -2 ln L = {fval:.10g}", final=True)
