"""What the laddu-dask dashboard page shows, kept on the scheduler.

The client notes, per likelihood label (see :func:`laddu_dask.runtime.dashboard.record_fit_note`):

``"point"``
    one evaluation: its number, value (-2 ln L) and parameters (their names with the first
    note of a label, and whenever they change);
``"result"``
    a finished fit: its minimum, parameters, their errors when known, whether it is valid;
``"placement"``
    which worker holds which partitions of a prepared dataset;
``"decision"``
    a memory decision of the runtime (resident, streaming, statistics, ...) as a dict;
``"progress"``
    a many-fit run (``fit_bins``): bins and fits done, valid fits, each bin's best -2 ln L.

:class:`FitBoard` keeps them (the last :data:`MAX_POINTS` evaluations of each label) for
:mod:`laddu_dask.runtime.dashboard_page`; it is plain data, without Bokeh.

Examples
--------
>>> board = FitBoard()
>>> board.ingest("nll", "point", 1, 10.0, {"value": 5.0, "parameters": [1.0], "names": ["a"]})
>>> board.ingest("nll", "point", 2, 10.5, {"value": 4.0, "parameters": [1.5]})
>>> trace = board.latest()
>>> list(trace.values), trace.names, trace.parameters, trace.best
([5.0, 4.0], ['a'], [1.5], 4.0)
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from typing import Any

__all__ = ["MAX_POINTS", "FitBoard", "FitTrace"]

#: Evaluations kept per label (the page draws the last ones).
MAX_POINTS = 20_000

#: Seconds over which the page's evaluation rate is measured.
RATE_WINDOW = 5.0


@dataclass
class FitTrace:
    """One likelihood's notes (see the module)."""

    label: str
    numbers: deque = field(default_factory=lambda: deque(maxlen=MAX_POINTS))
    values: deque = field(default_factory=lambda: deque(maxlen=MAX_POINTS))
    times: deque = field(default_factory=lambda: deque(maxlen=MAX_POINTS))
    names: list[str] = field(default_factory=list)
    parameters: list[float] = field(default_factory=list)
    errors: list[float] | None = None
    result: dict[str, Any] | None = None
    placement: dict[str, dict[str, list[int]]] = field(default_factory=dict)
    decisions: dict[str, dict[str, Any]] = field(default_factory=dict)
    progress: dict[str, Any] | None = None
    evaluations: int = 0
    best: float = math.inf
    updated: float = 0.0

    def rate(self, now: float | None = None) -> float:
        """Evaluations per second over the last :data:`RATE_WINDOW` seconds before ``now``
        (default: the last note)."""
        if not self.times:
            return 0.0
        now = self.times[-1] if now is None else now
        recent = [t for t in self.times if now - RATE_WINDOW <= t <= now]
        if len(recent) < 2:
            return 0.0
        span = recent[-1] - recent[0]
        return (len(recent) - 1) / span if span > 0 else 0.0


class FitBoard:
    """The notes of every label, the newest label last."""

    def __init__(self) -> None:
        self.traces: dict[str, FitTrace] = {}

    def trace(self, label: str) -> FitTrace:
        trace = self.traces.pop(label, None) or FitTrace(label)
        self.traces[label] = trace  # the newest last
        return trace

    def latest(self) -> FitTrace | None:
        """The label noted last, or ``None``."""
        return next(reversed(self.traces.values()), None)

    def ingest(self, label: str, kind: str, number: int, when: float, payload: dict[str, Any]) -> None:
        """Keep one note (an unknown kind is ignored: a newer client may send more)."""
        trace = self.trace(label)
        trace.updated = when
        if kind == "point":
            value = float(payload["value"])
            trace.numbers.append(int(number))
            trace.values.append(value)
            trace.times.append(when)
            trace.evaluations += 1
            if math.isfinite(value) and value < trace.best:
                trace.best = value
            if "names" in payload:
                trace.names = list(payload["names"])
            if "parameters" in payload:
                trace.parameters = [float(v) for v in payload["parameters"]]
                trace.errors = None  # the errors belong to a finished fit's point
        elif kind == "result":
            trace.result = dict(payload)
            trace.names = list(payload.get("names", trace.names))
            trace.parameters = [float(v) for v in payload.get("parameters", trace.parameters)]
            errors = payload.get("errors")
            trace.errors = None if errors is None else [float(e) for e in errors]
        elif kind == "placement":
            held = payload["workers"]
            trace.placement[str(payload["dataset"])] = {str(w): list(p) for w, p in held.items()}
        elif kind == "decision":
            trace.decisions[str(payload.get("label", payload.get("dataset")))] = dict(payload)
        elif kind == "progress":
            trace.progress = dict(payload)
