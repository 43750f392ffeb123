"""The checks every ``ganesh`` constructor shares: each raises
:class:`~laddu_dask.errors.GaneshConfigError` naming the keyword at fault.

Examples
--------
>>> from laddu_dask.likelihood.ganesh.validate import positive
>>> positive("alpha", 0.5)
0.5
>>> positive("alpha", 0.0)
Traceback (most recent call last):
...
laddu_dask.errors.GaneshConfigError: alpha must be a finite number > 0, got 0.0
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from laddu_dask.errors import GaneshConfigError


def number(name: str, value: Any) -> float:
    """``value`` as a finite float, or an error naming ``name``."""
    try:
        out = float(value)
    except (TypeError, ValueError):
        raise GaneshConfigError(f"{name} must be a finite number, got {value!r}") from None
    if not math.isfinite(out):
        raise GaneshConfigError(f"{name} must be a finite number, got {value!r}")
    return out


def positive(name: str, value: Any) -> float:
    """A finite ``value > 0``."""
    out = number(name, value)
    if out <= 0:
        raise GaneshConfigError(f"{name} must be a finite number > 0, got {value!r}")
    return out


def within(name: str, value: Any, low: float, high: float, *, closed_low: bool = False) -> float:
    """A finite ``value`` in ``(low, high)`` (``[low, high)`` when ``closed_low``)."""
    out = number(name, value)
    if not ((low <= out if closed_low else low < out) and out < high):
        left = "[" if closed_low else "("
        raise GaneshConfigError(f"{name} must be in {left}{low:g}, {high:g}), got {value!r}")
    return out


def count(name: str, value: Any, minimum: int) -> int:
    """An integer ``>= minimum``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise GaneshConfigError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def choice(name: str, value: Any, options: Sequence[str]) -> str:
    """One of ``options``."""
    if value not in options:
        raise GaneshConfigError(f"{name} must be one of {', '.join(map(repr, options))}, got {value!r}")
    return str(value)


def intervals(name: str, value: Any, *, finite: bool) -> tuple[tuple[float, float], ...]:
    """A sequence of ordered ``(low, high)`` pairs (``None`` an open end unless ``finite``)."""
    try:
        pairs = [tuple(p) for p in value]
    except TypeError:
        raise GaneshConfigError(f"{name} must be a sequence of (low, high) pairs, got {value!r}") from None
    out = []
    for i, pair in enumerate(pairs):
        if len(pair) != 2:
            raise GaneshConfigError(f"{name}[{i}] must be a (low, high) pair, got {pair!r}")
        lo, hi = (
            -math.inf if pair[0] is None else float(pair[0]),
            math.inf if pair[1] is None else float(pair[1]),
        )
        if math.isnan(lo) or math.isnan(hi) or not lo < hi or (finite and not math.isfinite(hi - lo)):
            kind = "finite and ordered" if finite else "ordered (low < high) and not NaN"
            raise GaneshConfigError(f"{name}[{i}] must be {kind}, got {pair!r}")
        out.append((lo, hi))
    return tuple(out)


def names(value: Any) -> list[str] | None:
    """``parameter_names``: ``None`` or a sequence of strings."""
    if value is None:
        return None
    if isinstance(value, str) or not all(isinstance(n, str) for n in value):
        raise GaneshConfigError(f"parameter_names must be a sequence of str, got {value!r}")
    return list(value)


class Settings:
    """Shared ``__repr__`` and ``__eq__`` over the constructor's keywords."""

    _fields: tuple[str, ...] = ()

    def __repr__(self) -> str:
        body = ", ".join(f"{f}={getattr(self, f)!r}" for f in self._fields)
        return f"{type(self).__name__}({body})"

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and all(
            np.array_equal(
                np.asarray(getattr(self, f), dtype=object), np.asarray(getattr(other, f), dtype=object)
            )
            for f in self._fields
        )

    __hash__ = None  # type: ignore[assignment]
