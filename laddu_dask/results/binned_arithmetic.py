"""``+ - * /`` of two :class:`~laddu_dask.results.binned.BinnedEstimate` objects (laddu 0.28.1's
``BinnedEstimate`` operators).

Both operands must be binned estimates on one grid (the same axes), and their units must
fit: ``+`` and ``-`` need equal units; ``*`` needs one ``unitless`` operand (the result has
the other's unit); ``/`` by a ``unitless`` estimate keeps the unit, by one of the same unit
gives ``unitless``. Bin by bin:

* the central values are combined (``0 / 0`` is NaN, as in laddu);
* the ensemble draws are combined draw by draw; an operand without draws enters with its
  central value in every draw; draws of two different ensembles are paired by index and
  the result names both ensembles in ``source_ids`` (laddu pairs them its own way);
* each uncertainty source (a source name and the id of its sample) present in one operand
  is propagated to first order, ``(df/dx)^2 var x``; a source present in both operands has
  an unknown correlation, so it is marked ``covariance_unavailable`` and a histogram that
  asks for it has NaN errors (laddu's rule);
* laddu-dask's own ``covariance`` source (the fit covariance through exact gradients) is
  propagated exactly when both operands come from one fit: the gradients combine by the
  same rule.

Examples
--------
>>> from laddu_dask.results.binned import BinnedEstimate
>>> edges = [[0.0, 1.0, 2.0]]
>>> a = BinnedEstimate([2.0, 4.0], axes=edges, unit="yield", variances={"accepted_mc_fill": [1.0, 4.0]})
>>> g = BinnedEstimate([4.0, 8.0], axes=edges, unit="yield", variances={"generated_mc_fill": [4.0, 4.0]})
>>> r = a / g
>>> r.unit, r.central, [round(e, 6) for e in r.histogram().errors]
('unitless', [0.5, 0.5], [0.353553, 0.279508])
>>> r.histogram().error_component_sources
[('accepted_mc_fill', 2), ('generated_mc_fill', 3)]
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from laddu_dask.errors import ModelError

__all__ = ["combine"]

_UNITLESS = "unitless"


def _unit(a: Any, b: Any, op: str) -> str:
    prefix = "invalid cross-section analysis: "
    if op in "+-":
        if a.unit != b.unit:
            raise ModelError(prefix + "binned estimate units do not match")
        return a.unit
    if op == "*":
        if _UNITLESS not in (a.unit, b.unit):
            raise ModelError(prefix + "multiplication requires a dimensionless operand")
        return b.unit if a.unit == _UNITLESS else a.unit
    if b.unit == _UNITLESS:
        return a.unit
    if a.unit == b.unit:
        return _UNITLESS
    raise ModelError(prefix + "binned estimate division has incompatible units")


def _values(x: np.ndarray, y: np.ndarray, op: str) -> np.ndarray:
    with np.errstate(all="ignore"):
        if op == "+":
            return x + y
        if op == "-":
            return x - y
        if op == "*":
            return x * y
        return x / y


def _derivatives(x: np.ndarray, y: np.ndarray, op: str) -> tuple[np.ndarray, np.ndarray]:
    """``df/dx`` and ``df/dy`` of ``f = x op y`` bin by bin."""
    one = np.ones_like(x)
    with np.errstate(all="ignore"):
        if op == "+":
            return one, one
        if op == "-":
            return one, -one
        if op == "*":
            return y, x
        return 1.0 / y, -x / (y * y)


def _draws(a: Any, b: Any, op: str) -> tuple[np.ndarray | None, int | None, list[int]]:
    da, db = a._draws, b._draws
    if da is None and db is None:
        return None, None, []
    if da is None:
        return _values(a._central[None, :], db, op), b._source_id, list(b._source_ids)
    if db is None:
        return _values(da, b._central[None, :], op), a._source_id, list(a._source_ids)
    k = min(len(da), len(db))
    ids = list(dict.fromkeys(a._source_ids + b._source_ids))
    same = a._source_id == b._source_id
    return _values(da[:k], db[:k], op), a._source_id if same else None, ids


def combine(a: Any, b: Any, op: str, kind: type) -> Any:
    """``a op b`` for binned estimates ``a`` and ``b`` (``op`` one of ``+ - * /``).

    ``kind`` is the class of binned estimates (:class:`~laddu_dask.results.binned.BinnedEstimate`,
    which calls this for its operators and passes itself): ``b`` must be one, and the result
    is one.

    Returns
    -------
    BinnedEstimate or NotImplemented
        ``NotImplemented`` when ``b`` is not a binned estimate (Python's ``TypeError``).

    Raises
    ------
    ModelError
        For estimates on different grids, or units that do not combine (laddu's messages).
    """
    if not isinstance(b, kind):
        return NotImplemented
    if a._central.shape != b._central.shape or (a._axes is not None and b._axes is not None
                                                and a._axes != b._axes):
        raise ModelError("invalid cross-section analysis: binned estimate geometry does not match")
    unit = _unit(a, b, op)
    central = _values(a._central, b._central, op)
    da, db = _derivatives(a._central, b._central, op)
    parts: dict[tuple[str, int], np.ndarray] = {}
    blocked = a._blocked | b._blocked
    with np.errstate(all="ignore"):
        for key in dict.fromkeys([*a._parts, *b._parts]):
            if key in a._parts and key in b._parts:
                blocked.add(key)
            elif key in a._parts:
                parts[key] = da * da * a._parts[key]
            else:
                parts[key] = db * db * b._parts[key]
    linear = None
    if a._linear is not None and b._linear is not None and a._linear.names == b._linear.names \
            and np.array_equal(a._linear.covariance, b._linear.covariance):
        gradients = a._linear.gradients * da[:, None] + b._linear.gradients * db[:, None]
        linear = replace(a._linear, gradients=gradients)
    elif (a._linear is None) != (b._linear is None):
        one, d = (a._linear, da) if a._linear is not None else (b._linear, db)
        linear = one.scaled(d)
    draws, source_id, ids = _draws(a, b, op)
    out = kind(np.zeros_like(central), axes=a._axes if a._axes is not None else b._axes, unit=unit,
               linear=linear)
    out._central, out._draws = central, draws
    out._source_id, out._source_ids = source_id, ids
    out._parts, out._blocked = {k: v for k, v in parts.items() if k not in blocked}, blocked
    out._variances = {}
    for (name, _), v in out._parts.items():
        out._variances[name] = out._variances.get(name, 0.0) + v
    return out
