"""Standard amplitudes built from elementary expressions (line shapes: ``lineshapes``).

Every amplitude here expands into ordinary expression nodes, so it is compiled,
differentiated and shared like any other part of a model.  Conventions follow
laddu 0.28.1.

Examples
--------
>>> import laddu_dask as ld
>>> ld.spherical_harmonic(1, 1, costheta=ld.scalar("c"), phi=ld.scalar("p")).kind
'complex'
"""

from __future__ import annotations

import math
from fractions import Fraction

from laddu_dask.errors import ModelError
from laddu_dask.expr.functions import complex_
from laddu_dask.expr.node import Expr, ExprLike, as_expr, constant
from laddu_dask.expr.quantum import doubled


def _integer(value: object, what: str) -> int:
    """An integral quantum number (``L``, ``M``, ``J``, int, float or Fraction) as an ``int``."""
    if isinstance(value, bool):
        raise ModelError(f"{what} must be an integer, got {value!r}")
    try:
        twice = doubled(value, what)
    except ModelError:
        raise ModelError(f"{what} must be an integer, got {value!r}") from None
    if twice % 2:
        raise ModelError(f"{what} must be an integer, got {value!r}")
    return twice // 2


def _real(value: ExprLike, what: str) -> Expr:
    out = as_expr(value)
    if out.kind != "real":
        raise ModelError(f"{what} must be real, got a complex expression")
    return out


def spherical_harmonic(l: int, m: int, *, costheta: ExprLike, phi: ExprLike) -> Expr:  # noqa: E741
    """Complex spherical harmonic ``Y_l^m(theta, phi)`` with the Condon-Shortley phase.

    ``Y_l^m = N_lm P_l^m(cos theta) e^{i m phi}``, ``N_lm = sqrt((2l+1)/(4 pi) (l-m)!/(l+m)!)``,
    ``P_l^m`` including ``(-1)^m``; ``Y_l^{-m} = (-1)^m conj(Y_l^m)``.  Any ``l >= 0`` and
    ``|m| <= l``.

    Parameters
    ----------
    l, m : int
        Degree and order.
    costheta, phi : Expr or float
        Cosine of the polar angle and the azimuth.

    Examples
    --------
    >>> import laddu_dask as ld
    >>> round(complex(ld.spherical_harmonic(0, 0, costheta=0.3, phi=1.0).attr).real, 6)
    0.282095
    """
    l = _integer(l, "l")  # noqa: E741
    m = _integer(m, "m")
    if l < 0 or abs(m) > l:
        raise ModelError(f"spherical_harmonic needs l >= 0 and |m| <= l, got l = {l}, m = {m}")
    x = _real(costheta, "costheta")
    phi = _real(phi, "phi")
    am = abs(m)
    # d^|m| P_l / dx^|m| as exact polynomial coefficients (Rodrigues' formula)
    coeffs = _legendre_derivative(l, am)
    norm = math.sqrt(
        (2 * l + 1) / (4 * math.pi) * math.factorial(l - am) / math.factorial(l + am)
    )
    sign = -1.0 if am % 2 else 1.0  # Condon-Shortley (-1)^m
    poly = _horner(coeffs, x)
    if am % 2:
        # complex root, as laddu: |costheta| a rounding step above 1 gives no NaN
        poly = poly * (1.0 - x * x).to_complex().sqrt() ** am
    elif am:
        poly = poly * (1.0 - x * x) ** (am // 2)
    real_part = poly * (sign * norm)
    if m == 0:
        return real_part.to_complex()
    angle = phi * float(am)
    if real_part.kind == "complex":
        ylm = real_part * complex_(angle.cos(), angle.sin())
    else:
        ylm = complex_(real_part * angle.cos(), real_part * angle.sin())
    if m < 0:
        ylm = ylm.conj() * (-1.0 if am % 2 else 1.0)
    return ylm


def _legendre_derivative(l: int, k: int) -> list[Fraction]:  # noqa: E741
    """Coefficients (constant term first) of ``d^k/dx^k P_l(x)``."""
    # P_l = 1/(2^l l!) d^l/dx^l (x^2 - 1)^l
    base = [Fraction(0)] * (2 * l + 1)
    for j in range(l + 1):
        base[2 * j] = Fraction(math.comb(l, j) * (-1) ** (l - j))
    poly = base
    for _ in range(l + k):
        poly = [poly[i] * i for i in range(1, len(poly))] or [Fraction(0)]
    scale = Fraction(1, 2**l * math.factorial(l))
    return [c * scale for c in poly]


def _horner(coeffs: list[Fraction], x: Expr) -> Expr:
    acc: Expr = constant(float(coeffs[-1]))
    for c in reversed(coeffs[:-1]):
        acc = acc * x + float(c)
    return acc
