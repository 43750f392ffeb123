"""Typed reading of the fields of a fit artifact's JSON: each reader returns the field as the
artifact holds it, or raises :class:`~laddu_dask.errors.FitArtifactError` naming the file and
the field.

Examples
--------
>>> record = {"objective": 3.5, "parameter_names": ["a", "b"]}
>>> number(record, "objective", "fit.json")
3.5
>>> try:
...     names(record, "values", "fit.json")
... except FitArtifactError as error:
...     print(error)
fit.json: field 'values' is missing
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from laddu_dask.errors import FitArtifactError

__all__ = ["FitArtifactError", "boolean", "check_record", "integer", "matrix", "names", "number", "optional",
           "text", "vector"]

_MISSING = object()


def check_record(record: Any, where: str) -> dict[str, Any]:
    """``record`` when it is a JSON object."""
    if not isinstance(record, dict):
        raise FitArtifactError(f"{where}: expected a JSON object, found {type(record).__name__}")
    return record


def _get(record: dict[str, Any], name: str, where: str) -> Any:
    value = record.get(name, _MISSING)
    if value is _MISSING:
        raise FitArtifactError(f"{where}: field {name!r} is missing")
    return value


def _bad(name: str, where: str, want: str, value: Any) -> FitArtifactError:
    shown = repr(value) if len(repr(value)) < 60 else type(value).__name__
    return FitArtifactError(f"{where}: field {name!r} must be {want}, found {shown}")


def optional(reader: Any, record: dict[str, Any], name: str, where: str) -> Any:
    """``reader``'s value of the field, or ``None`` where the field is ``null``."""
    if _get(record, name, where) is None:
        return None
    return reader(record, name, where)


def text(record: dict[str, Any], name: str, where: str) -> str:
    value = _get(record, name, where)
    if not isinstance(value, str):
        raise _bad(name, where, "a string", value)
    return value


def boolean(record: dict[str, Any], name: str, where: str) -> bool:
    value = _get(record, name, where)
    if not isinstance(value, bool):
        raise _bad(name, where, "true or false", value)
    return value


def integer(record: dict[str, Any], name: str, where: str, *, minimum: int = 0) -> int:
    value = _get(record, name, where)
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise _bad(name, where, f"an integer >= {minimum}", value)
    return value


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def number(record: dict[str, Any], name: str, where: str) -> float:
    value = _get(record, name, where)
    if not _is_number(value) or math.isinf(value):
        raise _bad(name, where, "a finite number (or NaN)", value)
    return float(value)


def names(record: dict[str, Any], name: str, where: str) -> list[str]:
    value = _get(record, name, where)
    if (not isinstance(value, list) or not all(isinstance(n, str) and n for n in value)
            or len(set(value)) != len(value)):
        raise _bad(name, where, "a list of distinct parameter names", value)
    return list(value)


def vector(record: dict[str, Any], name: str, where: str, size: int) -> np.ndarray:
    """A list of ``size`` numbers, as float64."""
    value = _get(record, name, where)
    if not isinstance(value, list) or len(value) != size or not all(_is_number(v) for v in value):
        raise _bad(name, where, f"a list of {size} numbers", value)
    return np.array(value, dtype=np.float64)


def matrix(record: dict[str, Any], name: str, where: str, rows: int | None, columns: int) -> np.ndarray:
    """A list of ``rows`` (any number when ``None``) lists of ``columns`` numbers, as float64."""
    value = _get(record, name, where)
    ok = isinstance(value, list) and (rows is None or len(value) == rows) and all(
        isinstance(r, list) and len(r) == columns and all(_is_number(v) for v in r) for r in value)
    if not ok:
        shape = f"{'K' if rows is None else rows} x {columns}"
        raise _bad(name, where, f"a {shape} matrix of numbers", value)
    return np.array(value, dtype=np.float64).reshape(len(value), columns)
