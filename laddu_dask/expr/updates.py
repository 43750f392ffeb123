"""Parameter edits after construction: :class:`ParameterUpdate` and their application.

A :class:`ParameterUpdate` holds the fields to change (laddu 0.28.1's keywords, plus
``name=`` to rename); :func:`update_parameters` applies a batch of them, keyed by
parameter name, to every occurrence of those parameters in an expression.  Each new
definition is checked as :func:`~laddu_dask.parameter` checks one, and the batch as a
whole (unknown names, two parameters renamed to one name) before anything is built.

Examples
--------
>>> import laddu_dask as ld
>>> model = ld.Model(ld.parameter("a", initial=1.0) * ld.parameter("b", fixed=2.0))
>>> new = model.with_parameters({"a": ld.ParameterUpdate(fixed=1.5), "b": ld.ParameterUpdate(fixed=None)})
>>> new.parameter_names, new.fixed_parameters
(['b'], {'a': 1.5})
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping

import numpy as np

from laddu_dask.errors import ParameterError
from laddu_dask.expr.node import Expr
from laddu_dask.expr.ops import REAL
from laddu_dask.expr.parameter import ParameterSpec, parameter
from laddu_dask.expr.tags import rewrite

_UNSET = object()
_FIELDS = ("name", "fixed", "initial", "bounds", "periodic", "scale", "unit", "latex", "description")


def _number(what: str, value: object) -> float:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ParameterError(f"ParameterUpdate: {what} must be a number or None, got {value!r}")
    out = float(value)
    if not math.isfinite(out):
        raise ParameterError(f"ParameterUpdate: {what} must be finite, got {out}")
    return out


class ParameterUpdate:
    """Edits to one parameter's definition (laddu's ``ParameterUpdate``).

    Omitted keywords leave a setting as it is; an explicit ``None`` clears it (frees a
    fixed parameter, restores the default initial value, removes bounds, scale or a
    label).  Apply updates with :meth:`Model.with_parameters`, keyed by parameter name,
    so one update can serve several parameters.

    Parameters
    ----------
    fixed : float or None, optional
        Fix at this value (which also becomes the initial value unless ``initial`` is
        given too), or free the parameter with ``None``.
    initial : float, (float, float) or None, optional
        The initial value, an initialization range ``(minimum, maximum)``, or ``None`` for
        the default (the middle of finite bounds).
    bounds : (float or None, float or None) or None, optional
        New inclusive bounds; ``None`` removes both.
    periodic : bool, optional
        Whether the parameter wraps around its (finite) bounds.
    scale : float or None, optional
        Positive finite optimizer scale, or ``None`` to remove it.
    unit, latex, description : str or None, optional
        New labels, or ``None`` to clear them.
    name : str, optional
        Rename the parameter (a laddu-dask addition; laddu cannot rename).

    Raises
    ------
    ParameterError
        For a value of the wrong type, a NaN or infinite number, bounds that are not a
        pair, a scale that is not positive, an initial range that is not two numbers.

    Examples
    --------
    >>> import laddu_dask as ld
    >>> ld.ParameterUpdate(fixed=1.0, unit="GeV")
    ParameterUpdate(fixed=1.0, unit='GeV')
    """

    __slots__ = _FIELDS

    def __init__(self, *, fixed: float | None = _UNSET, initial: float | None = _UNSET,  # type: ignore[assignment]
                 bounds: tuple[float | None, float | None] | None = _UNSET,  # type: ignore[assignment]
                 periodic: bool = _UNSET, scale: float | None = _UNSET,  # type: ignore[assignment]
                 unit: str | None = _UNSET, latex: str | None = _UNSET,  # type: ignore[assignment]
                 description: str | None = _UNSET, name: str = _UNSET) -> None:  # type: ignore[assignment]
        if fixed is not _UNSET and fixed is not None:
            fixed = _number("fixed", fixed)
        if initial is not _UNSET and initial is not None:
            if isinstance(initial, (tuple, list)):
                if len(initial) != 2:
                    raise ParameterError(f"ParameterUpdate: an initial range must be (minimum, maximum), "
                                         f"got {initial!r}")
                initial = (_number("initial", initial[0]), _number("initial", initial[1]))
            else:
                initial = _number("initial", initial)
        if bounds is not _UNSET and bounds is not None:
            if not isinstance(bounds, (tuple, list)) or len(bounds) != 2:
                raise ParameterError(f"ParameterUpdate: bounds must be a pair (lo, hi) or None, "
                                     f"got {bounds!r}")
            bounds = tuple(None if b is None else float(_bound(b)) for b in bounds)
        if periodic is not _UNSET and not isinstance(periodic, (bool, np.bool_)):
            raise ParameterError(f"ParameterUpdate: periodic must be True or False, got {periodic!r}")
        if scale is not _UNSET and scale is not None:
            scale = _number("scale", scale)
            if not scale > 0.0:
                raise ParameterError(f"ParameterUpdate: scale must be positive and finite, got {scale}")
        for key, label in (("unit", unit), ("latex", latex), ("description", description)):
            if label is not _UNSET and label is not None and not isinstance(label, str):
                raise ParameterError(f"ParameterUpdate: {key} must be a string or None, got {label!r}")
        if name is not _UNSET and (not isinstance(name, str) or not name.strip()):
            raise ParameterError(f"ParameterUpdate: name must be a non-empty string, got {name!r}")
        values = {"name": name, "fixed": fixed, "initial": initial, "bounds": bounds,
                  "periodic": periodic if periodic is _UNSET else bool(periodic), "scale": scale,
                  "unit": unit, "latex": latex, "description": description}
        for key, value in values.items():
            object.__setattr__(self, key, value)

    def __setattr__(self, key: str, value: object) -> None:
        raise AttributeError("a ParameterUpdate is immutable; build a new one")

    def given(self) -> dict[str, object]:
        """The fields this update sets, by keyword."""
        return {k: getattr(self, k) for k in _FIELDS if getattr(self, k) is not _UNSET}

    def __repr__(self) -> str:
        order = ("fixed", "initial", "bounds", "periodic", "scale", "unit", "latex", "description", "name")
        given = self.given()
        return "ParameterUpdate(" + ", ".join(f"{k}={given[k]!r}" for k in order if k in given) + ")"

    def apply(self, spec: ParameterSpec) -> ParameterSpec:
        """The definition ``spec`` becomes under this update (checked as by ``parameter``).

        Raises
        ------
        ParameterError
            When the new definition is invalid (an initial or fixed value outside the
            bounds, a periodic parameter without finite bounds), naming the parameter.
        """
        given = self.given()
        fields = {f.name: getattr(spec, f.name) for f in dataclasses.fields(ParameterSpec)}
        fields.update({k: v for k, v in given.items() if k not in ("initial", "bounds")})
        if "bounds" in given:
            fields["bounds"] = (None, None) if given["bounds"] is None else given["bounds"]
        initial = given.get("initial", _UNSET)
        if initial is _UNSET:
            kept = spec.initial_range or spec.initial
            initial = fields["fixed"] if given.get("fixed") is not None else kept
        fixed = fields["fixed"]
        lo, hi = fields["bounds"]
        if fixed is not None and ((lo is not None and fixed < lo) or (hi is not None and fixed > hi)):
            raise ParameterError(f"parameter {fields['name']!r}: fixed value {fixed} lies outside its "
                                 f"bounds [{lo}, {hi}]")
        checked = parameter(fields["name"], initial=initial if fixed is None else None,
                            bounds=fields["bounds"], fixed=fixed, periodic=fields["periodic"],
                            scale=fields["scale"], unit=fields["unit"], latex=fields["latex"],
                            description=fields["description"]).attr
        if fixed is not None and initial is not None:
            checked = dataclasses.replace(checked, initial=initial if not isinstance(initial, tuple)
                                          else 0.5 * (initial[0] + initial[1]))
        return checked


def _bound(value: object) -> float:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ParameterError(f"ParameterUpdate: a bound must be a number or None, got {value!r}")
    return float(value)


def update_parameters(expr: Expr, specs: Mapping[str, ParameterSpec],
                      updates: Mapping[str, ParameterUpdate]) -> Expr:
    """``expr`` with the parameters named in ``updates`` redefined (``specs``: the current
    definitions of every parameter of ``expr``, by name).

    Raises
    ------
    ParameterError
        For a mapping that is not a dict of names to :class:`ParameterUpdate`, an unknown
        name, an invalid new definition, or a new name another parameter keeps or gets.
    """
    if not isinstance(updates, Mapping):
        raise ParameterError(f"with_parameters takes a dict of parameter name -> ParameterUpdate, "
                             f"got {type(updates).__name__}")
    new: dict[str, ParameterSpec] = {}
    for name, update in updates.items():
        if not isinstance(name, str):
            raise ParameterError(f"with_parameters: a parameter name must be a string, got {name!r}")
        if not isinstance(update, ParameterUpdate):
            raise ParameterError(f"with_parameters: the update of {name!r} must be a ParameterUpdate, "
                                 f"got {type(update).__name__} {update!r}")
        if name not in specs:
            raise ParameterError(f"with_parameters: unknown parameter {name!r}; the model's parameters "
                                 f"are {', '.join(sorted(specs)) or 'none'}")
        new[name] = update.apply(specs[name])
    owners: dict[str, str] = {}
    for old in specs:
        final = new[old].name if old in new else old
        if final in owners:
            first = owners[final]
            raise ParameterError(f"with_parameters: renaming gives two parameters the name {final!r} "
                                 f"({first!r} and {old!r}); choose another name")
        owners[final] = old
    nodes = {name: Expr._intern("param", (), spec, REAL) for name, spec in new.items()}

    def replace(node: Expr, args: tuple[Expr, ...]) -> Expr | None:
        if node.op == "param" and node.attr.name in nodes:
            return nodes[node.attr.name]
        return None

    return rewrite(expr, replace)
