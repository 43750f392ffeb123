"""Wigner D functions and Clebsch-Gordan coefficients (laddu 0.28.1's ``WignerD`` and
``clebsch_gordan``), for integer and half-integer angular momenta.

A Wigner small-d element of fixed ``(j, m', m)`` is a fixed polynomial in ``cos(beta/2)``
and ``sin(beta/2)`` (Wigner's formula); it is built from ordinary expression nodes with
exact coefficients, so it fuses, differentiates and, of event angles, is event-only
(computed once per event by the split) like any other expression.

Conventions (laddu's): ``D^j_{m'm}(alpha, beta, gamma) = e^{-i m' alpha} d^j_{m'm}(beta)
e^{-i m gamma}`` and

``d^j_{m'm}(beta) = sum_k (-1)^(k-m+m') sqrt((j+m')!(j-m')!(j+m)!(j-m)!) /
((j+m-k)! k! (j-k-m')! (k-m+m')!) cos(beta/2)^(2j-2k+m-m') sin(beta/2)^(2k-m+m')``,

so ``d^1_{10}(beta) = -sin(beta)/sqrt(2)``.

Examples
--------
>>> import laddu_dask as ld
>>> round(ld.WignerD(0.5, 0.5, -0.5).d(1.0).attr, 12) == round(-math.sin(0.5), 12)
True
>>> ld.clebsch_gordan(j1=0.5, m1=0.5, j2=0.5, m2=-0.5, j=0, m=0)
0.7071067811865476
"""

from __future__ import annotations

import json as _json
import math
from fractions import Fraction
from typing import Any

from laddu_dask.errors import ModelError
from laddu_dask.expr.functions import cis
from laddu_dask.expr.node import Expr, ExprLike, as_expr, powi
from laddu_dask.expr.quantum import J, M, doubled


def _factorial_half(twice: int) -> int:
    """``(twice / 2)!`` of an even ``twice >= 0``."""
    return math.factorial(twice // 2)


def _signed_sqrt(square: Fraction, sign: int) -> float:
    """``sign * sqrt(square)`` correctly rounded twice (the square, then its root)."""
    return math.copysign(math.sqrt(float(square)), sign) if square else 0.0


class WignerD:
    """A Wigner rotation-matrix element of fixed ``(j, m', m)`` (laddu's ``WignerD``).

    Parameters
    ----------
    j : J, S, L, int, float or Fraction
        Nonnegative integer or half-integer angular momentum.
    m_prime, m : M, int, float or Fraction
        Output and input projections, ``|m'|, |m| <= j``, integral when ``j`` is and
        half-integral when ``j`` is.

    Raises
    ------
    ModelError
        If a value is not an integer or half-integer, ``j`` is negative, or a projection
        lies outside ``[-j, j]`` or has the other integer/half-integer kind than ``j``.

    Examples
    --------
    >>> import laddu_dask as ld
    >>> w = ld.WignerD(1, 1, 0)
    >>> abs(w.d(math.pi / 2).attr + 1 / math.sqrt(2)) < 1e-15
    True
    >>> w.D(alpha=ld.scalar("phi"), beta=ld.scalar("theta")).kind
    'complex'
    """

    __slots__ = ("j", "m_prime", "m", "_terms")

    def __init__(self, j: Any, m_prime: Any, m: Any) -> None:
        self.j = J(j)
        self.m_prime = M(m_prime)
        self.m = M(m)
        dj = self.j.doubled
        for name, proj in (("m_prime", self.m_prime), ("m", self.m)):
            if abs(proj.doubled) > dj:
                raise ModelError(f"WignerD needs |{name}| <= j, got j = {self.j.fraction}, "
                                 f"{name} = {proj.fraction}")
            if (dj - proj.doubled) % 2:
                raise ModelError(f"WignerD needs j and {name} both integral or both half-integral, "
                                 f"got j = {self.j.fraction}, {name} = {proj.fraction}")
        self._terms = _small_d_terms(dj, self.m_prime.doubled, self.m.doubled)

    def __repr__(self) -> str:
        return f"WignerD({self.j!r}, {self.m_prime!r}, {self.m!r})"

    def to_json(self) -> str:
        """The element as laddu's JSON (doubled quantum numbers and the summation range).

        Examples
        --------
        >>> import laddu_dask as ld
        >>> ld.WignerD(1, 1, 0).to_json()
        '{"dj":2,"dmp":2,"dm":0,"jpm":1,"jmmp":0,"delta":1,"s_min":0,"s_max":0}'
        """
        dj, dmp, dm = self.j.doubled, self.m_prime.doubled, self.m.doubled
        jpm, jmmp, delta = (dj + dm) // 2, (dj - dmp) // 2, (dmp - dm) // 2
        fields = {"dj": dj, "dmp": dmp, "dm": dm, "jpm": jpm, "jmmp": jmmp, "delta": delta,
                  "s_min": max(0, -delta), "s_max": min(jpm, jmmp)}
        return _json.dumps(fields, separators=(",", ":"))

    @staticmethod
    def from_json(json: str) -> WignerD:
        """The element serialized by :meth:`to_json` (laddu's JSON)."""
        try:
            fields = _json.loads(json)
            dj, dmp, dm = (int(fields[k]) for k in ("dj", "dmp", "dm"))
        except (ValueError, TypeError, KeyError) as err:
            raise ModelError(f"not a WignerD in JSON ({err}): {json!r}") from None
        return WignerD(Fraction(dj, 2), Fraction(dmp, 2), Fraction(dm, 2))

    def d(self, beta: ExprLike) -> Expr:
        """The small-d element ``d^j_{m'm}(beta)`` (real for a real ``beta``).

        Parameters
        ----------
        beta : Expr or float
            The polar Euler angle (radians).

        Examples
        --------
        >>> import laddu_dask as ld
        >>> ld.WignerD(2, 0, 0).d(0.0).attr
        1.0
        """
        half = as_expr(beta) * 0.5
        c, s = half.cos(), half.sin()
        out: Expr | None = None
        for coeff, pc, ps in self._terms:
            term = coeff * powi(c, pc) * powi(s, ps)
            out = term if out is None else out + term
        assert out is not None  # k = max(0, m - m') always contributes
        return out

    def D(self, *, alpha: ExprLike, beta: ExprLike, gamma: ExprLike | None = None) -> Expr:  # noqa: N802
        """The complex element ``D^j_{m'm}(alpha, beta, gamma) = e^{-i m' alpha} d(beta) e^{-i m gamma}``.

        Parameters
        ----------
        alpha, beta : Expr or float
            The first two Euler angles (radians), e.g. ``phi`` and ``theta`` of a direction.
        gamma : Expr or float, optional
            The third Euler angle; zero by default.

        Examples
        --------
        >>> import laddu_dask as ld
        >>> complex(ld.WignerD(1, 1, 1).D(alpha=math.pi / 2, beta=0.0).attr)
        (6.123233995736766e-17-1j)
        """
        phase = as_expr(alpha) * (-self.m_prime.value)
        if gamma is not None:
            phase = phase - as_expr(gamma) * self.m.value
        out = cis(phase) * self.d(beta)
        return out if out.kind == "complex" else out.to_complex()


def _small_d_terms(dj: int, dmp: int, dm: int) -> list[tuple[float, int, int]]:
    """``(coefficient, power of cos(beta/2), power of sin(beta/2))`` of ``d^j_{m'm}``.

    Arguments are doubled; the sum runs over ``k`` with every factorial argument >= 0.
    """
    root = (_factorial_half(dj + dmp) * _factorial_half(dj - dmp)
            * _factorial_half(dj + dm) * _factorial_half(dj - dm))
    jpm, jmmp, delta = (dj + dm) // 2, (dj - dmp) // 2, (dmp - dm) // 2  # j+m, j-m', m'-m
    terms = []
    for k in range(max(0, -delta), min(jpm, jmmp) + 1):
        den = (math.factorial(jpm - k) * math.factorial(k) * math.factorial(jmmp - k)
               * math.factorial(k + delta))
        sign = -1 if (k + delta) % 2 else 1
        terms.append((_signed_sqrt(Fraction(root, den * den), sign), jpm + jmmp - 2 * k, 2 * k + delta))
    return terms


def clebsch_gordan(*, j1: Any, m1: Any, j2: Any, m2: Any, j: Any, m: Any) -> float:
    """The Clebsch-Gordan coefficient ``<j1 m1, j2 m2 | j m>`` (Condon-Shortley phase).

    Computed exactly in rational arithmetic (Racah's formula), then rounded: the result is
    within one rounding of the true value.  Selection-rule violations give ``0.0``.

    Parameters
    ----------
    j1, j2, j : J, S, L, int, float or Fraction
        Nonnegative integer or half-integer angular momenta.
    m1, m2, m : M, int, float or Fraction
        Their projections (integer or half-integer).

    Raises
    ------
    ModelError
        If a value is not an integer or half-integer, or an angular momentum is negative.

    Examples
    --------
    >>> import laddu_dask as ld
    >>> ld.clebsch_gordan(j1=1, m1=1, j2=0.5, m2=-0.5, j=1.5, m=0.5)
    0.5773502691896257
    """
    a, b, c = J(j1).doubled, J(j2).doubled, J(j).doubled
    x, y, z = (doubled(v, name) for v, name in ((m1, "m1"), (m2, "m2"), (m, "m")))
    if x + y != z or not abs(a - b) <= c <= a + b or (a + b + c) % 2:
        return 0.0
    if any(abs(p) > q or (q - p) % 2 for p, q in ((x, a), (y, b), (z, c))):
        return 0.0
    f = _factorial_half
    pre = Fraction((c + 1) * f(a + b - c) * f(a - b + c) * f(-a + b + c), f(a + b + c + 2))
    pre *= f(c + z) * f(c - z) * f(a - x) * f(a + x) * f(b - y) * f(b + y)
    # sum over k of (-1)^k / (k! (j1+j2-j-k)! (j1-m1-k)! (j2+m2-k)! (j-j2+m1+k)! (j-j1-m2+k)!)
    lo = max(0, (b - c - x) // 2, (a - c + y) // 2)
    hi = min((a + b - c) // 2, (a - x) // 2, (b + y) // 2)
    total = Fraction(0)
    for k in range(lo, hi + 1):
        den = (math.factorial(k) * f(a + b - c - 2 * k) * f(a - x - 2 * k) * f(b + y - 2 * k)
               * f(c - b + x + 2 * k) * f(c - a - y + 2 * k))
        total += Fraction(-1 if k % 2 else 1, den)
    return _signed_sqrt(pre * total * total, 1 if total > 0 else -1)
