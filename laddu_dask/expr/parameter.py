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

import numpy as np

from laddu_dask.errors import ParameterError
from laddu_dask.expr.functions import complex_, polar_complex
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
    periodic : bool
        Whether the parameter is an angle-like coordinate that wraps around its (finite)
        bounds (laddu's ``periodic``): the fits leave it free and wrap it into its
        bounds instead of limiting it there, as laddu's do.
    scale : float or None
        A positive characteristic scale for optimizers (laddu's ``scale``); stored, not
        yet used by the fits.
    unit, latex, description : str or None
        Labels for reports and plots.
    initial_range : (float, float) or None
        laddu's initialization range ``(minimum, maximum)``, from which starts are sampled
        (:func:`sample_initial`); :attr:`initial` is then its middle.
    """

    name: str
    initial: float
    bounds: tuple[float | None, float | None] = (None, None)
    fixed: float | None = None
    periodic: bool = False
    scale: float | None = None
    unit: str | None = None
    latex: str | None = None
    description: str | None = None
    initial_range: tuple[float, float] | None = None

    @property
    def is_fixed(self) -> bool:
        """Whether the parameter is held at :attr:`fixed`."""
        return self.fixed is not None

    def describe(self) -> str:
        """One line: ``name = value [lo, hi]`` (``unbounded``, ``[0, +inf)``) or ``(fixed)``."""
        if self.is_fixed:
            return f"{self.name} = {self.fixed} (fixed)"
        span = "" if self.initial_range is None else f" (from {list(self.initial_range)})"
        start = f"{self.initial}{span}"
        return f"{self.name} = {start} {format_bounds(*self.bounds)}"


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
    initial: float | tuple[float, float] | None = None,
    bounds: tuple[float | None, float | None] | None = None,
    fixed: float | None = None,
    periodic: bool = False,
    scale: float | None = None,
    unit: str | None = None,
    latex: str | None = None,
    description: str | None = None,
) -> Expr:
    """Create a named, real fit parameter (laddu's ``parameter``).

    Parameters
    ----------
    name : str
        Unique name.
    initial : float or (float, float), optional
        Starting value (finite), or laddu's initialization range ``(minimum, maximum)``
        inside the bounds, from which ``sample_parameters`` draws starts (a fit without
        ``initial`` starts from its middle).  Defaults to the middle of finite bounds,
        the finite bound when only one is given, else 0.
    bounds : (float or None, float or None), optional
        Inclusive limits honoured by the fits; ``None``, ``-inf`` (lower) or
        ``inf`` (upper) means unbounded on that side, as in laddu.
    fixed : float, optional
        Hold the parameter at this finite value: it is folded into the model as a
        constant and is not among the free parameters.
    periodic : bool, default False
        The parameter wraps around its bounds, which must then be finite on both sides
        (stored in the specification; the fits do not wrap values yet).
    scale : float, optional
        Positive, finite characteristic scale for optimizers (stored; not used yet).
    unit, latex, description : str, optional
        Labels kept in the specification.

    Returns
    -------
    Expr
        A real expression.

    Raises
    ------
    ParameterError
        For an empty name, an initial or fixed value that is not a finite number, a
        NaN bound, a bound that allows no value (a lower bound of ``inf``), inverted
        bounds or an initial value outside them, a periodic parameter without finite
        bounds, a scale that is not positive and finite, or a label that is not a string,
        naming the parameter.

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
    meta = _metadata(name, lo, hi, periodic, scale, unit, latex, description)
    if fixed is not None:
        value = _check_number(name, "fixed value", fixed)
        spec = ParameterSpec(name, value, (lo, hi), value, **meta)
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
        elif isinstance(initial, (tuple, list)):
            span = _initial_range(name, initial, lo, hi)
            spec = ParameterSpec(name, 0.5 * (span[0] + span[1]), (lo, hi), None, **meta, initial_range=span)
            return Expr._intern("param", (), spec, REAL)
        else:
            value = _check_number(name, "initial value", initial)
        if (lo is not None and value < lo) or (hi is not None and value > hi):
            raise ParameterError(
                f"parameter {name!r}: initial value {value} lies outside its bounds [{lo}, {hi}]"
            )
        spec = ParameterSpec(name, value, (lo, hi), None, **meta)
    return Expr._intern("param", (), spec, REAL)


def _initial_range(name: str, initial: object, lo: float | None, hi: float | None) -> tuple[float, float]:
    """laddu's ``initial=(minimum, maximum)``: finite, increasing, inside the bounds."""
    if len(initial) != 2:  # type: ignore[arg-type]
        raise ParameterError(f"parameter {name!r}: an initial range must be (minimum, maximum), "
                             f"got {initial!r}")
    a, b = (_check_number(name, "initial range end", v) for v in initial)  # type: ignore[union-attr]
    if not a < b:
        raise ParameterError(f"parameter {name!r}: initial range [{a}, {b}] is empty (minimum < maximum)")
    if (lo is not None and a < lo) or (hi is not None and b > hi):
        raise ParameterError(f"parameter {name!r}: initial range [{a}, {b}] is outside its bounds "
                             f"[{lo}, {hi}]")
    return (a, b)


def sample_initial(specs: Iterable[ParameterSpec], rng: np.random.Generator) -> list[float]:
    """A start for each free parameter of ``specs`` (laddu's rule): uniform in its
    initialization range (``initial=(min, max)``, inside the bounds), else its initial value.

    Examples
    --------
    >>> import numpy as np
    >>> import laddu_dask as ld
    >>> specs = [ld.parameter("a", initial=(1.0, 2.0)).attr, ld.parameter("b", initial=0.3).attr]
    >>> x = sample_initial(specs, np.random.default_rng(0))
    >>> 1.0 <= x[0] < 2.0, x[1]
    (True, 0.3)
    """
    out = []
    for spec in specs:
        if spec.is_fixed:
            continue
        span = spec.initial_range
        out.append(spec.initial if span is None else float(rng.uniform(*span)))
    return out


def draw_starts(specs: Iterable[ParameterSpec], seed: int, n: int | None) -> list[float] | list[list[float]]:
    """:func:`sample_initial` with ``numpy.random.default_rng(seed)``: one start, or ``n``."""
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise ParameterError(f"seed must be a non-negative integer, got {seed!r}")
    if n is not None and (isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 1):
        raise ParameterError(f"n must be a positive integer or None, got {n!r}")
    specs = list(specs)
    rng = np.random.default_rng(int(seed))
    if n is None:
        return sample_initial(specs, rng)
    return [sample_initial(specs, rng) for _ in range(int(n))]


def _metadata(name: str, lo: float | None, hi: float | None, periodic: object, scale: object,
              unit: object, latex: object, description: object) -> dict:
    """The checked metadata fields of a :class:`ParameterSpec`."""
    if not isinstance(periodic, (bool, np.bool_)):
        raise ParameterError(f"parameter {name!r}: periodic must be True or False, got {periodic!r}")
    if periodic and (lo is None or hi is None):
        raise ParameterError(f"parameter {name!r}: a periodic parameter needs finite bounds on both "
                             f"sides (lo < hi), got [{lo}, {hi}]")
    if scale is not None:
        scale = _check_number(name, "scale", scale)
        if not scale > 0.0:
            raise ParameterError(f"parameter {name!r}: scale must be positive and finite, got {scale}")
    labels = {"unit": unit, "latex": latex, "description": description}
    for key, label in labels.items():
        if label is not None and not isinstance(label, str):
            raise ParameterError(f"parameter {name!r}: {key} must be a string, got {label!r}")
    return {"periodic": bool(periodic), "scale": scale, **labels}


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


_SUFFIXES = {"cartesian": (" real", " imag"), "polar": (" magnitude", " phase")}


def _pair(name: str, what: str, value: object, is_component) -> tuple:
    """``value`` for each of the two components: a pair of components as given, else the
    one value broadcast to both."""
    if isinstance(value, (tuple, list)) and len(value) == 2 and all(is_component(v) for v in value):
        return tuple(value)
    if is_component(value):
        return (value, value)
    raise ParameterError(f"complex parameter {name!r}: {what} must be one value for both "
                         f"components or a pair of them, got {value!r}")


def _is_bound_pair(v: object) -> bool:
    return v is None or (isinstance(v, (tuple, list)) and len(v) == 2
                         and all(b is None or isinstance(b, (int, float, np.number)) for b in v))


def _is_label(v: object) -> bool:
    return v is None or isinstance(v, str)


def _is_number_or_none(v: object) -> bool:
    return v is None or (isinstance(v, (int, float, np.number)) and not isinstance(v, bool))


def _components(name: str, what: str, value: object, coordinates: str) -> tuple:
    """A complex number (split by the coordinates) or a pair of component values."""
    if value is None:
        return (None, None)
    if isinstance(value, (complex, np.complexfloating)):
        z = complex(value)
        return (z.real, z.imag) if coordinates == "cartesian" else (abs(z), math.atan2(z.imag, z.real))
    if _is_number_or_none(value):
        return _components(name, what, complex(value), coordinates)
    if isinstance(value, (tuple, list)) and len(value) == 2 and all(
            _is_number_or_none(v) or (what == "initial" and _is_range(v)) for v in value):
        return tuple(value)
    raise ParameterError(f"complex parameter {name!r}: {what} must be a complex number or a pair "
                         f"of component values, got {value!r}")


def _is_range(v: object) -> bool:
    return isinstance(v, (tuple, list)) and len(v) == 2 and all(_is_number_or_none(b) and b is not None
                                                                for b in v)


def cparameter(
    name: str,
    *,
    initial: complex | tuple[float, float] | None = None,
    coordinates: str = "cartesian",
    suffixes: tuple[str, str] | None = None,
    bounds: tuple | None = None,
    fixed: complex | tuple[float | None, float | None] | None = None,
    periodic: bool | tuple[bool, bool] | None = None,
    scale: float | tuple[float | None, float | None] | None = None,
    unit: str | tuple[str | None, str | None] | None = None,
    latex: str | tuple[str | None, str | None] | None = None,
    description: str | tuple[str | None, str | None] | None = None,
) -> Expr:
    """A complex expression of two real fit parameters (laddu's ``cparameter``).

    Parameters
    ----------
    name : str
        Base name; the parameters are ``name + suffixes[0]`` and ``name + suffixes[1]``.
    initial : complex or pair, optional
        A complex starting value (split into the coordinates), one value per component, or
        a pair of laddu's initialization ranges ``((min, max), (min, max))`` (either may be a
        plain value).
    coordinates : {"cartesian", "polar"}, default "cartesian"
        Real and imaginary parts, or magnitude and phase (``magnitude * exp(i phase)``).
    suffixes : (str, str), optional
        Default ``(" real", " imag")`` (cartesian) or ``(" magnitude", " phase")`` (polar).
    bounds : (lo, hi) or ((lo, hi), (lo, hi)), optional
        Bounds of both components, or of each.
    fixed : complex or (float or None, float or None), optional
        Fix both components (a complex value) or some (``None``: free).
    periodic, scale, unit, latex, description : one value or a pair, optional
        As in :func:`parameter`, for both components or for each.

    Returns
    -------
    Expr
        A complex expression.

    Raises
    ------
    ParameterError
        For other coordinates or suffixes, values of the wrong shape, or a component
        :func:`parameter` rejects.

    Examples
    --------
    >>> import laddu_dask as ld
    >>> beta = ld.cparameter("beta", initial=1.0 + 2.0j)
    >>> ld.Model(beta).parameter_names, ld.Model(beta).default_parameters
    (['beta real', 'beta imag'], [1.0, 2.0])
    >>> ld.Model(ld.cparameter("g", coordinates="polar")).parameter_names
    ['g magnitude', 'g phase']
    """
    if coordinates not in _SUFFIXES:
        raise ParameterError(f"complex parameter {name!r}: coordinates must be 'cartesian' or 'polar', "
                             f"got {coordinates!r}")
    if not isinstance(name, str) or not name.strip():
        raise ParameterError(f"a parameter name must be a non-empty string, got {name!r}")
    if suffixes is None:
        suffixes = _SUFFIXES[coordinates]
    if (not isinstance(suffixes, (tuple, list)) or len(suffixes) != 2
            or not all(isinstance(x, str) for x in suffixes) or suffixes[0] == suffixes[1]):
        raise ParameterError(f"complex parameter {name!r}: suffixes must be two different strings, "
                             f"got {suffixes!r}")
    starts = _components(name, "initial", initial, coordinates)
    fixes = _components(name, "fixed", fixed, coordinates)
    if isinstance(bounds, (tuple, list)) and len(bounds) == 2 and all(_is_bound_pair(b) for b in bounds):
        both_bounds = tuple(bounds)
    else:
        both_bounds = _pair(name, "bounds", bounds, _is_bound_pair)
    periodics = _pair(name, "periodic", periodic, lambda v: v is None or isinstance(v, (bool, np.bool_)))
    scales = _pair(name, "scale", scale, _is_number_or_none)
    units = _pair(name, "unit", unit, _is_label)
    latexes = _pair(name, "latex", latex, _is_label)
    descriptions = _pair(name, "description", description, _is_label)
    parts = [
        parameter(name + suffixes[i], initial=starts[i], bounds=both_bounds[i], fixed=fixes[i],
                  periodic=bool(periodics[i]), scale=scales[i], unit=units[i], latex=latexes[i],
                  description=descriptions[i])
        for i in range(2)
    ]
    return complex_(*parts) if coordinates == "cartesian" else polar_complex(*parts)
