"""HTML tables and text formats shared by the notebook views of models, datasets,
executions, memory decisions and fit results; whether standard output is a terminal
(where progress rewrites one line; in a file or a pipe it writes whole lines), and
distributed's progress of a cluster's tasks shown accordingly.

Every cell is escaped with :func:`html.escape` unless it is wrapped in :class:`Raw`
(HTML built here, such as a link); byte counts go through
:func:`dask.utils.format_bytes`.

Examples
--------
>>> from laddu_dask.views import format_bounds, table
>>> format_bounds(0.0, None), format_bounds(None, None), format_bounds(1.0, 2.0)
('[0, +inf)', 'unbounded', '[1, 2]')
>>> table(["name", "value"], [["a<b", "1"]])
'<table><tr><th>name</th><th>value</th></tr><tr><td>a&lt;b</td><td>1</td></tr></table>'
"""

from __future__ import annotations

import html
import math
import sys
from collections.abc import Iterable, Sequence
from typing import Any

from dask.utils import format_bytes

__all__ = ["Raw", "bytes_text", "format_bounds", "key_values", "link", "on_terminal", "show_progress",
           "table"]


class Raw(str):
    """A cell that is HTML already (not escaped again)."""


def _cell(value: Any) -> str:
    return value if isinstance(value, Raw) else html.escape(str(value))


def table(headers: Sequence[str], rows: Iterable[Sequence[Any]], caption: str | None = None) -> str:
    """An HTML table with a header cell over every column.

    Examples
    --------
    >>> table(["a"], [[1]], caption="t")
    '<table><caption>t</caption><tr><th>a</th></tr><tr><td>1</td></tr></table>'
    """
    cap = "" if caption is None else f"<caption>{html.escape(caption)}</caption>"
    head = "".join(f"<th>{_cell(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{_cell(v)}</td>" for v in row) + "</tr>" for row in rows)
    return f"<table>{cap}<tr>{head}</tr>{body}</table>"


def key_values(rows: Iterable[tuple[str, Any]], caption: str | None = None) -> str:
    """A two-column HTML table of named properties (each name a row header).

    Examples
    --------
    >>> key_values([("device", "cpu")])
    "<table><tr><th style='text-align:left'>device</th><td style='text-align:left'>cpu</td></tr></table>"
    """
    cap = "" if caption is None else f"<caption>{html.escape(caption)}</caption>"
    body = "".join(
        f"<tr><th style='text-align:left'>{_cell(k)}</th><td style='text-align:left'>{_cell(v)}</td></tr>"
        for k, v in rows
    )
    return f"<table>{cap}{body}</table>"


def link(url: str, text: str | None = None) -> Raw:
    """An escaped link that opens in a new tab.

    Examples
    --------
    >>> link("http://127.0.0.1:8787/status")
    '<a href="http://127.0.0.1:8787/status" target="_blank">http://127.0.0.1:8787/status</a>'
    """
    shown = url if text is None else text
    return Raw(f'<a href="{html.escape(url, quote=True)}" target="_blank">{html.escape(shown)}</a>')


def bytes_text(n: int | None, none: str = "unlimited") -> str:
    """``format_bytes(n)`` (e.g. ``'1.53 MiB'``), or ``none`` for ``None``.

    Examples
    --------
    >>> bytes_text(1604321), bytes_text(None)
    ('1.53 MiB', 'unlimited')
    """
    return none if n is None else format_bytes(int(n))


def format_bounds(lo: float | None, hi: float | None) -> str:
    """Limits as an interval (``'[1, 2]'``, ``'[0, +inf)'``), or ``'unbounded'``.

    ``None`` and an infinite limit both mean no limit on that side.

    Examples
    --------
    >>> format_bounds(None, 2.5), format_bounds(float("-inf"), float("inf"))
    ('(-inf, 2.5]', 'unbounded')
    """
    low = None if lo is None or math.isinf(lo) else lo
    high = None if hi is None or math.isinf(hi) else hi
    if low is None and high is None:
        return "unbounded"
    left = "(-inf" if low is None else f"[{low:g}"
    right = "+inf)" if high is None else f"{high:g}]"
    return f"{left}, {right}"


def on_terminal() -> bool:
    """Whether standard output is a terminal (``sys.stdout.isatty()``); ``False`` for a file,
    a pipe, a captured or closed stream.

    Progress rewrites one line with ``\\r`` on a terminal only: in a file or a pipe every
    rewrite would join the previous ones on a single line.
    """
    stream = sys.stdout
    try:
        return bool(stream is not None and stream.isatty())
    except (AttributeError, ValueError, OSError):  # no isatty, or a closed stream
        return False


def show_progress(futures: list[Any]) -> None:
    """distributed's progress of ``futures``: a widget in a notebook, a text bar in a
    terminal, one line in a file or a pipe (where the bar's ``\\r`` rewrites would join).

    The text bar blocks until its tasks end, so it runs in a thread of its own: the
    caller's wait (with its timeout) decides when preparation is over.
    """
    import threading

    from distributed import progress
    from distributed.utils import is_kernel

    if is_kernel():
        try:
            progress(futures)
            return
        except ImportError:  # a notebook without ipywidgets
            pass
    if not on_terminal():
        print(f"laddu-dask: preparing {len(futures)} partition(s) on the cluster", flush=True)
        return
    threading.Thread(target=progress, args=(futures,), kwargs={"notebook": False},
                     name="laddu-dask-progress", daemon=True).start()
