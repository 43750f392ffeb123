"""Parameter layout: turning user parameter values into an ordered vector.

Examples
--------
>>> from laddu_dask.compile.layout import resolve_parameters
>>> resolve_parameters(["a", "b"], {"b": 2.0, "a": 1.0})
[1.0, 2.0]
>>> resolve_parameters(["a", "b"], [1, 2])
[1.0, 2.0]
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from laddu_dask.errors import ParameterError

ParameterValues = Sequence[float] | Mapping[str, float] | np.ndarray


def _finite(name: str, value: Any) -> float:
    try:
        out = float(value)
    except (TypeError, ValueError):
        raise ParameterError(f"parameter {name!r}: value {value!r} is not a number") from None
    if not math.isfinite(out):
        raise ParameterError(f"parameter {name!r}: value {out} is not finite")
    return out


def resolve_parameters(
    names: Sequence[str], values: ParameterValues, *, defaults: Mapping[str, float] | None = None
) -> list[float]:
    """Order ``values`` as ``names``.

    Parameters
    ----------
    names : sequence of str
        The free parameters, in layout order.
    values : sequence of float or mapping of str to float
        Values in ``names`` order, or by name.
    defaults : mapping, optional
        Values for names a mapping leaves out; without it every name is required.

    Raises
    ------
    ParameterError
        On a wrong length, an unknown or missing name, or a non-finite value.
    """
    names = list(names)
    if isinstance(values, Mapping):
        unknown = [k for k in values if k not in names]
        if unknown:
            raise ParameterError(
                f"unknown parameter{'s' if len(unknown) > 1 else ''} "
                f"{', '.join(map(repr, unknown))}; the free parameters are: {', '.join(names)}"
            )
        out = []
        missing = []
        for name in names:
            if name in values:
                out.append(_finite(name, values[name]))
            elif defaults is not None and name in defaults:
                out.append(float(defaults[name]))
            else:
                missing.append(name)
        if missing:
            raise ParameterError(f"no value given for parameter(s): {', '.join(missing)}")
        return out
    if (isinstance(values, np.ndarray) and values.dtype == np.float64 and values.ndim == 1
            and len(values) == len(names) and np.isfinite(values).all()):
        return values.tolist()  # the common case (a minimiser's point), checked at once
    if isinstance(values, (str, bytes)):
        raise ParameterError(f"parameter values must be numbers, got {values!r}")
    try:
        seq = list(np.asarray(values, dtype=object).reshape(-1)) if not isinstance(
            values, list
        ) else values
    except Exception:  # noqa: BLE001 - any non-sequence
        raise ParameterError(f"parameter values must be a sequence or a mapping, got {values!r}") from None
    if len(seq) != len(names):
        raise ParameterError(
            f"expected {len(names)} parameter values ({', '.join(names)}), got {len(seq)}"
        )
    return [_finite(n, v) for n, v in zip(names, seq)]
