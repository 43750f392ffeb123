"""Checks of numeric keywords and settings, in one place and safe against NaN and infinities.

Every range check is written so that NaN fails it (``not (x >= minimum)``), and every
number must be finite unless the caller says otherwise: a NaN tolerance or timeout
would otherwise pass both ``x >= 0`` and ``x <= 0`` tests and be used as it is.

Examples
--------
>>> number(0.5, "tolerance", above=0.0)
0.5
>>> number(float("nan"), "tolerance", above=0.0)
Traceback (most recent call last):
...
laddu_dask.errors.ParameterError: tolerance must be a finite number > 0, got nan
>>> integer(3, "max_calls", minimum=1)
3
>>> duration("90s", "wait_timeout")
90.0
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from dask.utils import parse_timedelta

from laddu_dask.errors import ParameterError

__all__ = ["duration", "integer", "number"]


def _range(minimum: float | None, above: float | None, maximum: float | None) -> str:
    parts = [f">= {minimum:g}" if minimum is not None else "", f"> {above:g}" if above is not None else "",
             f"<= {maximum:g}" if maximum is not None else ""]
    return " and ".join(p for p in parts if p)


def number(value: Any, what: str, *, minimum: float | None = None, above: float | None = None,
           maximum: float | None = None, finite: bool = True,
           error: type[Exception] = ParameterError) -> float:
    """``value`` as a float, checked to be a real number (finite unless ``finite=False``,
    never NaN) within ``[minimum, maximum]`` and ``> above``.

    Raises
    ------
    ParameterError (or ``error``)
        Naming ``what``, the allowed range and the value.
    """
    bad = isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating))
    out = math.nan if bad else float(value)
    ok = (not bad and not math.isnan(out) and (not finite or math.isfinite(out))
          and (minimum is None or out >= minimum) and (above is None or out > above)
          and (maximum is None or out <= maximum))
    if not ok:
        kind = "a finite number" if finite else "a number"
        limits = _range(minimum, above, maximum)
        raise error(f"{what} must be {kind}{' ' + limits if limits else ''}, got {value!r}")
    return out


def integer(value: Any, what: str, *, minimum: int | None = None, maximum: int | None = None,
            error: type[Exception] = ParameterError) -> int:
    """``value`` as an int (a Python or NumPy integer, not a bool) within ``[minimum, maximum]``."""
    ok = (not isinstance(value, (bool, np.bool_)) and isinstance(value, (int, np.integer))
          and (minimum is None or value >= minimum) and (maximum is None or value <= maximum))
    if not ok:
        limits = _range(minimum, None, maximum)
        raise error(f"{what} must be an integer{' ' + limits if limits else ''}, got {value!r}")
    return int(value)


def duration(value: Any, what: str, error: type[Exception] = ParameterError) -> float:
    """Seconds of a positive, finite duration: a number of seconds or a string such as ``"90s"``
    or ``"10 minutes"`` (Dask's :func:`~dask.utils.parse_timedelta`)."""
    seconds: float | None = None
    if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_)):
        seconds = float(value)
    elif isinstance(value, str):
        try:
            seconds = parse_timedelta(value, default="s")
        except (ValueError, TypeError, KeyError, OverflowError):
            seconds = None
    if seconds is None or not (math.isfinite(seconds) and seconds > 0):
        raise error(f"{what} must be a positive, finite duration such as 90 (seconds) or '10 minutes', "
                    f"got {value!r}")
    return float(seconds)
