"""Two-body kinematics as laddu 0.28.1 names them: the breakup momentum ``q`` and the
phase space ``rho`` on either Riemann sheet (``Sheet``), and the Chew-Mandelstam function.

Each expands into ordinary expression nodes; ``s`` may be real or complex (a complex ``s``
continues the functions analytically, as in laddu).

Examples
--------
>>> import laddu_dask as ld
>>> complex(ld.rho(1e8, mass1=0.14, mass2=0.14).attr).real > 0.999
True
"""

from __future__ import annotations

import enum
import json as _json
import math

from laddu_dask.errors import ModelError
from laddu_dask.expr.amplitudes import _real
from laddu_dask.expr.node import Expr, ExprLike, as_expr

__all__ = ["Sheet", "breakup_momentum", "chew_mandelstam", "q", "rho"]


class _Named(enum.Enum):
    """An enumeration printed as laddu prints it (``Sheet.PHYSICAL``) with laddu's JSON form."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}.{self.name}"

    __str__ = __repr__

    def to_json(self) -> str:
        """The JSON form laddu writes (``'"Physical"'``)."""
        return _json.dumps(self.value)

    @classmethod
    def from_json(cls, json: str) -> _Named:
        """The member from its JSON form (laddu's ``from_json``)."""
        try:
            return cls(_json.loads(json))
        except (ValueError, TypeError):
            raise ModelError(f"not a {cls.__name__} in JSON: {json!r}") from None


class Sheet(_Named):
    """Riemann sheet of the two-body functions ``q`` and ``rho`` (laddu's ``Sheet``).

    ``PHYSICAL``: the principal branch, ``q = +i |q|`` below threshold; ``UNPHYSICAL``:
    the adjacent sheet, the momentum with its sign flipped.

    Examples
    --------
    >>> Sheet.UNPHYSICAL, Sheet.PHYSICAL.to_json()
    (Sheet.UNPHYSICAL, '"Physical"')
    """

    PHYSICAL = "Physical"
    UNPHYSICAL = "Unphysical"


def _s(value: ExprLike) -> Expr:
    """``s`` as an expression: real or complex."""
    return as_expr(value)


def _member(value: object, cls: type[_Named], what: str) -> _Named:
    if not isinstance(value, cls):
        names = " or ".join(f"{cls.__name__}.{m.name}" for m in cls)
        raise ModelError(f"{what} must be {names}, got {value!r}")
    return value


def breakup_momentum(s: ExprLike, mass1: ExprLike, mass2: ExprLike) -> Expr:
    """Two-body breakup momentum ``sqrt((s - (m1+m2)^2) (s - (m1-m2)^2)) / (2 sqrt s)``.

    Complex square roots (principal branch), so the momentum is ``+i |q|`` below threshold;
    the physical sheet of :func:`q`.

    Examples
    --------
    >>> import laddu_dask as ld
    >>> complex(ld.breakup_momentum(4.0, 0.0, 0.0).attr)
    (1+0j)
    """
    s = _s(s)
    m1, m2 = _real(mass1, "mass1"), _real(mass2, "mass2")
    lam = ((s - (m1 + m2) ** 2) * (s - (m1 - m2) ** 2)).to_complex()
    return lam.sqrt() / (2.0 * s.to_complex().sqrt())


def q(s: ExprLike, *, mass1: ExprLike, mass2: ExprLike, sheet: Sheet | None = None) -> Expr:
    """Complex two-body breakup momentum ``sqrt(lambda(s, m1^2, m2^2) / (4 s))`` (laddu's ``q``).

    Parameters
    ----------
    s : Expr, float or complex
        Squared invariant mass of the pair.
    mass1, mass2 : Expr or float
        Daughter masses.
    sheet : Sheet, optional
        ``Sheet.PHYSICAL`` (default): principal branch, ``+i |q|`` below threshold;
        ``Sheet.UNPHYSICAL``: the negated momentum.

    Examples
    --------
    >>> import laddu_dask as ld
    >>> complex(ld.q(4.0, mass1=0.0, mass2=0.0, sheet=ld.Sheet.UNPHYSICAL).attr)
    (-1-0j)
    """
    sheet = _member(Sheet.PHYSICAL if sheet is None else sheet, Sheet, "sheet")
    out = breakup_momentum(s, mass1, mass2)
    return out if sheet is Sheet.PHYSICAL else -out


def rho(s: ExprLike, *, mass1: ExprLike, mass2: ExprLike, sheet: Sheet | None = None) -> Expr:
    """Two-body phase-space factor ``rho = 2 q / sqrt(s)`` (laddu's ``rho``), 1 at high ``s``.

    Parameters
    ----------
    s : Expr, float or complex
        Squared invariant mass.
    mass1, mass2 : Expr or float
        Daughter masses.
    sheet : Sheet, optional
        Sheet of the momentum ``q`` (default ``Sheet.PHYSICAL``).

    Examples
    --------
    >>> import laddu_dask as ld
    >>> complex(ld.rho(4.0, mass1=0.0, mass2=0.0).attr)
    (1+0j)
    """
    s = _s(s)
    return 2.0 * q(s, mass1=mass1, mass2=mass2, sheet=sheet) / s.to_complex().sqrt()


def chew_mandelstam(s: ExprLike, *, mass1: ExprLike, mass2: ExprLike) -> Expr:
    """Chew-Mandelstam function of a two-body channel on the physical sheet (laddu's form).

    ``C(s) = [rho log((chi + rho) / (chi - rho)) - chi (m2 - m1)/(m1 + m2) log(m2/m1)] / pi``
    with ``chi = 1 - (m1 + m2)^2 / s`` and ``rho`` of :func:`rho`; above threshold
    ``Im C = -rho``, so ``1 - K C`` has laddu's K-matrix normalisation.  Both masses must be
    non-zero (the formula is ``0 * inf`` for a massless daughter).

    Parameters
    ----------
    s : Expr, float or complex
        Squared invariant mass.
    mass1, mass2 : Expr or float
        Daughter masses.

    Examples
    --------
    >>> import laddu_dask as ld
    >>> round(complex(ld.chew_mandelstam(1.44, mass1=0.4, mass2=0.5).attr).imag, 6)
    -0.659137
    """
    s = _s(s)
    m1, m2 = _real(mass1, "mass1"), _real(mass2, "mass2")
    for m, what in ((m1, "mass1"), (m2, "mass2")):
        if m.op == "const" and m.attr == 0.0:
            raise ModelError(f"chew_mandelstam needs non-zero daughter masses, got {what} = 0")
    chi = 1.0 - (m1 + m2) ** 2 / s
    r = rho(s, mass1=m1, mass2=m2)
    return (r * ((chi + r) / (chi - r)).log() - chi * ((m2 - m1) / (m1 + m2)) * (m2 / m1).log()) / math.pi
