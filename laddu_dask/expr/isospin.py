"""Isospin: a total isospin and its optional third component (laddu's ``Isospin``).

Examples
--------
>>> import laddu_dask as ld
>>> ld.Isospin(0.5, projection=-0.5).to_json()
'{"isospin":1,"projection":-1}'
"""

from __future__ import annotations

import json as _json
from fractions import Fraction
from typing import Any

from laddu_dask.errors import ModelError
from laddu_dask.expr.quantum import J, M


class Isospin:
    """A total isospin with an optional third component (laddu's ``Isospin``).

    Parameters
    ----------
    isospin : J, int, float or Fraction
        The non-negative integer or half-integer total isospin.
    projection : M, int, float or Fraction, optional
        The third component, in ``[-I, I]`` and integral exactly when ``I`` is.

    Examples
    --------
    >>> import laddu_dask as ld
    >>> ld.Isospin(0.5, projection=0.5), ld.particles.PI_PLUS.isospin
    (Isospin(J(1/2), M(1/2)), Isospin(J(1)))
    """

    __slots__ = ("_isospin", "_projection")

    def __init__(self, isospin: Any, *, projection: Any = None) -> None:
        self._isospin = J(isospin)
        self._projection = None if projection is None else M(projection)
        if self._projection is not None:
            i, m = self._isospin.doubled, self._projection.doubled
            if (i - m) % 2:
                raise ModelError(f"an isospin projection must be integral exactly when the isospin is, "
                                 f"got I = {self._isospin.fraction}, I3 = {self._projection.fraction}")
            if abs(m) > i:
                raise ModelError(f"an isospin projection must satisfy -I <= I3 <= I, got "
                                 f"I = {self._isospin.fraction}, I3 = {self._projection.fraction}")

    @property
    def isospin(self) -> J:
        """The total isospin."""
        return self._isospin

    @property
    def projection(self) -> M:
        """The third component; ``ModelError`` when it was not given."""
        if self._projection is None:
            raise ModelError(f"{self!r} has no projection")
        return self._projection

    @property
    def projection_checked(self) -> M | None:
        """The third component, or ``None``."""
        return self._projection

    def __repr__(self) -> str:
        if self._projection is None:
            return f"Isospin({self._isospin!r})"
        return f"Isospin({self._isospin!r}, {self._projection!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Isospin) and (self._isospin, self._projection) == (
            other._isospin, other._projection)

    def __hash__(self) -> int:
        return hash(("laddu_dask.Isospin", self._isospin, self._projection))

    def to_json(self) -> str:
        """``{"isospin": 2I, "projection": 2I3 or null}`` (laddu's serialization)."""
        projection = "null" if self._projection is None else str(self._projection.doubled)
        return f'{{"isospin":{self._isospin.doubled},"projection":{projection}}}'

    @staticmethod
    def from_json(json: str) -> Isospin:
        """The isospin serialized by :meth:`to_json` (``ModelError`` if it is not one)."""
        try:
            body = _json.loads(json)
            i, m = int(body["isospin"]), body["projection"]
        except (TypeError, ValueError, KeyError) as err:
            raise ModelError(f"not an Isospin in JSON ({type(err).__name__}: {err}): {json!r}") from None
        return Isospin(Fraction(i, 2), projection=None if m is None else Fraction(int(m), 2))
