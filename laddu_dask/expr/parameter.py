"""Named fit parameters.

A parameter is a leaf of the expression graph that carries its specification
(name, initial value, bounds, or a fixed value).  Two parameters are the same
when their names are equal; two specifications under one name must agree, which
:func:`merge_parameters` checks when a model or a likelihood is assembled.

Examples
--------
>>> import laddu_dask as ld
>>> m = ld.parameter("mass", initial=1.5, bounds=(1.3, 1.7))
>>> m.attr.name, m.attr.initial, m.attr.bounds
('mass', 1.5, (1.3, 1.7))
>>> ld.parameter("width", fixed=0.1).attr.is_fixed
True
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from laddu_dask.errors import ParameterError
from laddu_dask.expr.node import Expr
from laddu_dask.expr.ops import REAL
from laddu_dask.views import format_bounds


@dataclass(frozen=True)
class ParameterSpec:
    """The definition of one named parameter.

    Attributes
    ----------
    name : str
        Unique name used in parameter vectors and mappings.
    initial : float
        Starting value of a fit (the fixed value when fixed).
    bounds : tuple of (float or None, float or None)
        Inclusive limits; ``None`` means unbounded on that side.
    fixed : float or None
        The value a fixed parameter is held at, or ``None`` when free.
    """

    name: str
    initial: float
    bounds: tuple[float | None, float | None] = (None, None)
    fixed: float | None = None

    @property
    def is_fixed(self) -> bool:
        """Whether the parameter is held at :attr:`fixed`."""
        return self.fixed is not None

    def describe(self) -> str:
        """One line: ``name = value [lo, hi]`` (``unbounded``, ``[0, +inf)``) or ``(fixed)``."""
        if self.is_fixed:
            return f"{self.name} = {self.fixed} (fixed)"
        return f"{self.name} = {self.initial} {format_bounds(*self.bounds)}"


def _check_number(name: str, what: str, value: object, *, finite: bool = True) -> float:
    try:
        out = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ParameterError(f"parameter {name!r}: {what} must be a number, got {value!r}") from None
    if math.isnan(out):
        raise ParameterError(f"parameter {name!r}: {what} is NaN")
    if finite and math.isinf(out):
        raise ParameterError(f"parameter {name!r}: {what} {out} is not finite")
    return out


def _bound(name: str, what: str, value: object, unbounded: float) -> float | None:
    """A bound as a float, or None for no bound (``None`` or the infinity ``unbounded``)."""
    if value is None:
        return None
    out = _check_number(name, what, value, finite=False)
    if out == unbounded:
        return None
    if math.isinf(out):
        raise ParameterError(f"parameter {name!r}: {what} {out} leaves no allowed value")
    return out


def parameter(
    name: str,
    *,
    initial: float | None = None,
    bounds: tuple[float | None, float | None] | None = None,
    fixed: float | None = None,
) -> Expr:
    """Create a named, real fit parameter (laddu's ``parameter``).

    Parameters
    ----------
    name : str
        Unique name.
    initial : float, optional
        Starting value (finite).  Defaults to the middle of finite bounds, the
        finite bound when only one is given, else 0.
    bounds : (float or None, float or None), optional
        Inclusive limits honoured by the fits; ``None``, ``-inf`` (lower) or
        ``inf`` (upper) means unbounded on that side, as in laddu.
    fixed : float, optional
        Hold the parameter at this finite value: it is folded into the model as a
        constant and is not among the free parameters.

    Returns
    -------
    Expr
        A real expression.

    Raises
    ------
    ParameterError
        For an empty name, an initial or fixed value that is not a finite number, a
        NaN bound, a bound that allows no value (a lower bound of ``inf``), inverted
        bounds or an initial value outside them, naming the parameter.

    Examples
    --------
    >>> import laddu_dask as ld
    >>> ld.parameter("d0_re", initial=0.5).attr.initial
    0.5
    """
    if not isinstance(name, str) or not name.strip():
        raise ParameterError(f"a parameter name must be a non-empty string, got {name!r}")
    lo, hi = (None, None) if bounds is None else tuple(bounds)  # type: ignore[misc]
    lo = _bound(name, "lower bound", lo, -math.inf)
    hi = _bound(name, "upper bound", hi, math.inf)
    if lo is not None and hi is not None and not lo < hi:
        raise ParameterError(f"parameter {name!r}: lower bound {lo} is not below upper bound {hi}")
    if fixed is not None:
        value = _check_number(name, "fixed value", fixed)
        spec = ParameterSpec(name, value, (lo, hi), value)
    else:
        if initial is None:
            if lo is not None and hi is not None:
                value = 0.5 * (lo + hi)
            elif lo is not None:
                value = lo
            elif hi is not None:
                value = hi
            else:
                value = 0.0
        else:
            value = _check_number(name, "initial value", initial)
        if (lo is not None and value < lo) or (hi is not None and value > hi):
            raise ParameterError(
                f"parameter {name!r}: initial value {value} lies outside its bounds [{lo}, {hi}]"
            )
        spec = ParameterSpec(name, value, (lo, hi), None)
    return Expr._intern("param", (), spec, REAL)


def merge_parameters(specs: Iterable[ParameterSpec]) -> dict[str, ParameterSpec]:
    """Collect specifications by name, in first-seen order, checking they agree.

    Raises
    ------
    ParameterError
        When one name carries two different bounds, fixed values or initial values.
    """
    out: dict[str, ParameterSpec] = {}
    for spec in specs:
        seen = out.get(spec.name)
        if seen is None:
            out[spec.name] = spec
        elif seen != spec:
            raise ParameterError(
                f"two parameters are named {spec.name!r} but differ: {seen.describe()} "
                f"vs {spec.describe()}; give them different names or the same definition"
            )
    return out
