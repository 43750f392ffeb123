"""Formatting shared by the README's benchmark renderers: times, ratios, table rows, the
provenance sentence and the README's line wrapping.

Examples
--------
>>> from laddu_dask_bench.readme_format import ratio, seconds, table_row
>>> seconds(0.0123), seconds(2.5), ratio(0.456)
('12.30 ms', '2.50 s', '0.46x')
>>> table_row("value", 0.01, 0.02)
'| value | 10.00 ms | 20.00 ms | 0.50x |'
"""

from __future__ import annotations

import textwrap
from typing import Any


def seconds(x: float | None) -> str:
    """``12.30 ms`` below one second, ``2.50 s`` above; ``n/a`` for a missing figure."""
    if x is None:
        return "n/a"
    return f"{x * 1e3:.2f} ms" if x < 1.0 else f"{x:.2f} s"


def ratio(x: float | None) -> str:
    """``0.46x``; ``n/a`` for a missing figure."""
    return "n/a" if x is None else f"{x:.2f}x"


def get(d: Any, *keys: str) -> Any:
    """``d[k1][k2]...``, or None where a key is missing."""
    for k in keys:
        if not isinstance(d, dict) or k not in d:
            return None
        d = d[k]
    return d


def div(a: float | None, b: float | None) -> float | None:
    """``a / b``, or None where either is missing."""
    return None if a is None or b is None else a / b


def table_row(label: str, ours: float | None, theirs: float | None) -> str:
    """A table row: the label, both times and their ratio."""
    return f"| {label} | {seconds(ours)} | {seconds(theirs)} | {ratio(div(ours, theirs))} |"


def run_line(prov: dict[str, Any], packages: tuple[str, ...], own_processes: int | None = None) -> str:
    """One sentence: command, date, machine, load, versions (``own_processes``: the most
    worker processes the run itself started, which load the machine at its end)."""
    from dask.utils import format_bytes

    m, v = prov["machine"], prov["versions"]
    start, end = m.get("load_average_start"), m.get("load_average_end")
    load = ""
    if start and end:
        load = f"; 1-minute load average {start[0]:.2f} at the start and {end[0]:.2f} at the end"
        if start[0] > m["cores"] or end[0] > m["cores"] and not own_processes:
            load += " (more than its cores: other work shared the machine)"
        elif end[0] > m["cores"]:
            load += f" (its own {own_processes} worker processes)"
    names = ", ".join(f"{p} {v[p]}" for p in packages if p in v)
    return (f"Command `{prov['command']}`, run {prov['date'][:10]} on {m['cpu']} ({m['cores']} cores, "
            f"{format_bytes(m['memory_bytes'])}){load}; Python {v['python']}, {names}.")


def wrap(line: str, width: int = 92) -> str:
    """Prose wrapped like the rest of the README; headings, tables and comments as they are."""
    if not line or line.startswith(("#", "|", "<!--")):
        return line
    return textwrap.fill(line, width, break_long_words=False, break_on_hyphens=False)
