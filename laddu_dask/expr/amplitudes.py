"""Standard amplitudes built from elementary expressions.

Every amplitude here expands into ordinary expression nodes, so it is compiled,
differentiated and shared like any other part of a model.  Conventions follow
laddu 0.28.1.

Examples
--------
>>> import laddu_dask as ld
>>> s = ld.Vec4.event("x").m2()
>>> bw = ld.breit_wigner(s, mass=ld.parameter("m0", initial=1.5), width=0.1)
>>> bw.kind
'complex'
"""

from __future__ import annotations

import math
from fractions import Fraction

from laddu_dask.errors import ModelError
from laddu_dask.expr.node import Expr, ExprLike, as_expr, complex_, constant
from laddu_dask.expr.quantum import doubled

#: Reference momentum of the Blatt-Weisskopf barrier factors (GeV), laddu's default.
Q_R = 0.1973


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


def breit_wigner(s: ExprLike, *, mass: ExprLike, width: ExprLike) -> Expr:
    """Constant-width Breit-Wigner ``1 / (mass^2 - s - i mass width)``.

    Parameters
    ----------
    s : Expr or float
        Squared invariant mass.
    mass, width : Expr or float
        Pole mass and width.

    Examples
    --------
    >>> import laddu_dask as ld
    >>> complex(ld.breit_wigner(2.0, mass=1.0, width=1.0).attr)
    (-0.5+0.5j)
    """
    s = _real(s, "s")
    mass = _real(mass, "mass")
    width = _real(width, "width")
    return 1.0 / complex_(mass * mass - s, -(mass * width))


def breakup_momentum(s: ExprLike, mass1: ExprLike, mass2: ExprLike) -> Expr:
    """Two-body breakup momentum ``sqrt((s - (m1+m2)^2) (s - (m1-m2)^2)) / (2 sqrt s)``.

    Complex square roots (principal branch), so the momentum is ``+i |q|`` below threshold.

    Examples
    --------
    >>> import laddu_dask as ld
    >>> complex(ld.breakup_momentum(4.0, 0.0, 0.0).attr)
    (1+0j)
    """
    s = _real(s, "s")
    m1, m2 = _real(mass1, "mass1"), _real(mass2, "mass2")
    lam = ((s - (m1 + m2) ** 2) * (s - (m1 - m2) ** 2)).to_complex()
    return lam.sqrt() / (2.0 * s.to_complex().sqrt())


def _barrier_polynomial(z: Expr, l: int) -> Expr:  # noqa: E741
    """``B_l(z)^2`` of the full Blatt-Weisskopf factors, ``z = (q / q_r)^2``."""
    if l == 0:
        return constant(1.0)
    if l == 1:
        return 2.0 * z / (z + 1.0)
    if l == 2:
        return 13.0 * z * z / ((z - 3.0) ** 2 + 9.0 * z)
    if l == 3:
        return 277.0 * z**3 / (((z + 6.0) * z + 45.0) * z + 225.0)
    if l == 4:
        return 12746.0 * z**4 / ((((z + 10.0) * z + 135.0) * z + 1575.0) * z + 11025.0)
    raise ModelError(f"Blatt-Weisskopf factors are defined here for l = 0..4, got l = {l}")


def blatt_weisskopf(q: ExprLike, l: int, q_r: ExprLike = Q_R) -> Expr:  # noqa: E741
    """Blatt-Weisskopf barrier factor ``B_l(z) = sqrt(P_l(z))``, ``z = (q / q_r)^2``.

    The "full" factors (with the ``q^l`` threshold behaviour), normalised to 1 at large
    ``q``; ``q_r = 0.1973`` GeV by default, as in laddu.

    Parameters
    ----------
    q : Expr or float
        Breakup momentum (real or complex).
    l : int
        Orbital angular momentum, 0 to 4.
    q_r : float or Expr
        Reference momentum (inverse interaction radius), GeV.

    Examples
    --------
    >>> import laddu_dask as ld
    >>> round(ld.blatt_weisskopf(0.1973, 1).attr, 12)
    1.0
    """
    l = _integer(l, "l")  # noqa: E741
    q = as_expr(q)
    return _barrier_polynomial((q / q_r) ** 2, l).sqrt()


def relativistic_breit_wigner(
    s: ExprLike,
    *,
    mass: ExprLike,
    width: ExprLike,
    mass1: ExprLike,
    mass2: ExprLike,
    l: int = 0,  # noqa: E741
) -> Expr:
    """Relativistic Breit-Wigner with a mass-dependent width (laddu's convention).

    ``1 / (M^2 - s - i M Gamma(s))`` with
    ``Gamma(s) = Gamma0 (M / sqrt s) (q / q0) B_l(q)^2 / B_l(q0)^2``, where ``q`` and ``q0``
    are the (complex, principal-branch) breakup momenta at ``s`` and ``M^2`` and ``B_l``
    the Blatt-Weisskopf factors with ``q_r = 0.1973`` GeV.  No numerator factor.

    Parameters
    ----------
    s : Expr or float
        Squared invariant mass.
    mass, width : Expr or float
        Pole mass and nominal width.
    mass1, mass2 : Expr or float
        Daughter masses.
    l : int
        Orbital angular momentum (0 to 4).

    Examples
    --------
    >>> import laddu_dask as ld
    >>> bw = ld.relativistic_breit_wigner(1.5**2, mass=1.5, width=0.1, mass1=0.5, mass2=0.5, l=2)
    >>> complex(bw.attr) == 1j / (1.5 * 0.1)
    True
    """
    l = _integer(l, "l")  # noqa: E741
    s = _real(s, "s")
    mass, width = _real(mass, "mass"), _real(width, "width")
    m1, m2 = _real(mass1, "mass1"), _real(mass2, "mass2")
    m_sq = mass * mass
    q = breakup_momentum(s, m1, m2)
    q0 = breakup_momentum(m_sq, m1, m2)
    ratio = _barrier_polynomial((q / Q_R) ** 2, l) / _barrier_polynomial((q0 / Q_R) ** 2, l)
    gamma = width * (mass / s.to_complex().sqrt()) * (q / q0) * ratio
    return 1.0 / (m_sq - s - 1j * mass * gamma)


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
