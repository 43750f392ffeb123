"""Line shapes as laddu 0.28.1 names them, on the two-body functions of
:mod:`~laddu_dask.expr.two_body`.

Blatt-Weisskopf barrier factors (``BarrierKind.FULL`` and
``TENSOR``, ``l = 0..8``), constant-width and relativistic Breit-Wigners, and a Flatte
form.  Every function expands into ordinary expression nodes, so it fuses, differentiates
and splits into event-only and parameter-dependent parts like any other expression; ``s``
may be real or complex (a complex ``s`` continues the functions analytically, as in laddu).

Examples
--------
>>> import laddu_dask as ld
>>> s = ld.Vec4.event("x").m2()
>>> ld.relativistic_breit_wigner(s, mass=1.5, width=0.1, mass1=0.5, mass2=0.5, l=2).kind
'complex'
>>> complex(ld.rho(1e8, mass1=0.14, mass2=0.14).attr).real > 0.999
True
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from laddu_dask.errors import ModelError
from laddu_dask.expr.amplitudes import _integer, _real
from laddu_dask.expr.functions import complex_
from laddu_dask.expr.linalg import Matrix, Vector, matrix
from laddu_dask.expr.node import Expr, ExprLike, as_expr, constant
from laddu_dask.expr.two_body import _member, _Named, _s, breakup_momentum, rho

#: Reference momentum of the Blatt-Weisskopf barrier factors (GeV), laddu's default.
Q_R = 0.1973

#: Highest orbital angular momentum of the Blatt-Weisskopf factors (laddu's limit).
MAX_L = 8

# Denominators of the squared full barrier factors, z = (q / q_r)^2, leading coefficient
# 1 omitted, highest power first: |x h_l(x)|^2 x^(2l) of the spherical Hankel function.
# The numerator is the sum of the coefficients, so every factor is 1 at q = q_r.
_DENOMINATORS = {
    3: (6, 45, 225),
    4: (10, 135, 1575, 11025),
    5: (15, 315, 6300, 99225, 893025),
    6: (21, 630, 18900, 496125, 9823275, 108056025),
    7: (28, 1134, 47250, 1819125, 58939650, 1404728325, 18261468225),
    8: (36, 1890, 103950, 5457375, 255405150, 9833098275, 273922023375, 4108830350625),
}


class BarrierKind(_Named):
    """Convention of a Blatt-Weisskopf factor (laddu's ``BarrierKind``).

    ``FULL``: ``B_l(q)`` with its ``q^l`` threshold behaviour, 1 at ``q = q_r``;
    ``TENSOR``: ``B_l(q) / q^l``, for amplitudes whose tensors carry the ``q^l``.

    Examples
    --------
    >>> BarrierKind.TENSOR
    BarrierKind.TENSOR
    """

    FULL = "Full"
    TENSOR = "Tensor"


def _barrier_l(l: object) -> int:  # noqa: E741
    out = _integer(l, "l")
    if not 0 <= out <= MAX_L:
        raise ModelError(f"Blatt-Weisskopf factors are defined for l = 0..{MAX_L}, got l = {out}")
    return out


def _reference_momentum(q_r: ExprLike) -> Expr:
    out = _real(q_r, "q_r")
    if out.op == "const" and not (math.isfinite(out.attr) and out.attr > 0.0):
        raise ModelError(f"q_r must be positive and finite, got {out.attr!r}")
    return out


def _horner(z: Expr, coefficients: Sequence[int]) -> Expr:
    acc = z + float(coefficients[0])
    for c in coefficients[1:]:
        acc = acc * z + float(c)
    return acc


def _barrier_polynomial(z: Expr, l: int) -> Expr:  # noqa: E741
    """``B_l(z)^2`` of the full Blatt-Weisskopf factors, ``z = (q / q_r)^2``."""
    if l == 0:
        return constant(1.0)
    if l == 1:
        return 2.0 * z / (z + 1.0)
    if l == 2:
        return 13.0 * z * z / ((z - 3.0) ** 2 + 9.0 * z)
    coefficients = _DENOMINATORS[l]
    return float(1 + sum(coefficients)) * z**l / _horner(z, coefficients)


def blatt_weisskopf_custom(
    q: ExprLike,
    *,
    l: object,  # noqa: E741
    kind: BarrierKind = BarrierKind.FULL,
    q_r: ExprLike,
) -> Expr:
    """Blatt-Weisskopf factor with a chosen reference momentum ``q_r`` (laddu's ``_custom``).

    ``FULL``: ``B_l = sqrt(P_l(z))``, ``z = (q / q_r)^2``, ``P_l`` the ratio of polynomials
    from ``|x h_l(x)|^2`` normalised so that ``B_l = 1`` at ``q = q_r``; ``TENSOR``:
    ``B_l / q^l``.

    Parameters
    ----------
    q : Expr, float or complex
        Breakup momentum (complex below threshold).
    l : L, int, float or Fraction
        Orbital angular momentum, 0 to 8.
    kind : BarrierKind
        ``BarrierKind.FULL`` (default here; laddu requires it) or ``BarrierKind.TENSOR``.
    q_r : Expr or float
        Reference momentum (inverse interaction radius) in GeV: real, positive and finite
        (a bounded parameter to fit it).

    Examples
    --------
    >>> import laddu_dask as ld
    >>> round(ld.blatt_weisskopf_custom(0.3, l=3, kind=ld.BarrierKind.FULL, q_r=0.3).attr, 12)
    1.0
    """
    l = _barrier_l(l)  # noqa: E741
    kind = _member(kind, BarrierKind, "kind")
    q = as_expr(q)
    full = _barrier_polynomial((q / _reference_momentum(q_r)) ** 2, l).sqrt()
    return full if kind is BarrierKind.FULL else full / q**l


def blatt_weisskopf(q: ExprLike, l: object = None, *, kind: BarrierKind = BarrierKind.FULL) -> Expr:  # noqa: E741
    """Blatt-Weisskopf barrier factor with ``q_r = 0.1973`` GeV (laddu's ``blatt_weisskopf``).

    See :func:`blatt_weisskopf_custom` for the definition.

    Parameters
    ----------
    q : Expr, float or complex
        Breakup momentum.
    l : L, int, float or Fraction
        Orbital angular momentum, 0 to 8.
    kind : BarrierKind
        ``BarrierKind.FULL`` (default here) or ``BarrierKind.TENSOR``.

    Examples
    --------
    >>> import laddu_dask as ld
    >>> round(ld.blatt_weisskopf(0.1973, l=1, kind=ld.BarrierKind.FULL).attr, 12)
    1.0
    """
    if l is None:
        raise ModelError("blatt_weisskopf needs the orbital angular momentum l")
    return blatt_weisskopf_custom(q, l=l, kind=kind, q_r=Q_R)


def blatt_weisskopf_barriers(
    s: ExprLike,
    *,
    channel_mass_1: Vector | Sequence[ExprLike],
    channel_mass_2: Vector | Sequence[ExprLike],
    pole_masses: Vector | Sequence[ExprLike],
    l: object,  # noqa: E741
    q_r: ExprLike | None = None,
) -> Matrix:
    """Channel-by-pole barrier ratios ``B_l(q_c(s)) / B_l(q_c(m_p^2))`` (laddu's function).

    Rows are channels, columns poles; full factors on the physical sheet with reference
    momentum ``q_r`` (default 0.1973 GeV).

    Parameters
    ----------
    s : Expr, float or complex
        Squared invariant mass.
    channel_mass_1, channel_mass_2 : Vector, or sequence of Expr or float
        The two daughter masses of each channel.
    pole_masses : Vector, or sequence of Expr or float
        The pole masses.
    l : L, int, float or Fraction
        Orbital angular momentum, 0 to 8.
    q_r : Expr or float, optional
        Reference momentum in GeV.

    Returns
    -------
    Matrix
        ``out.at(channel, pole)``.

    Examples
    --------
    >>> import laddu_dask as ld
    >>> b = ld.blatt_weisskopf_barriers(1.0, channel_mass_1=ld.vector([0.14]),
    ...     channel_mass_2=[0.14], pole_masses=[1.0, 1.5], l=1)
    >>> b.shape, round(complex(b.at(0, 0).attr).real, 12)
    ((1, 2), 1.0)
    """
    l = _barrier_l(l)  # noqa: E741
    q_r = _reference_momentum(Q_R if q_r is None else q_r)
    m1s, m2s, poles = list(channel_mass_1), list(channel_mass_2), list(pole_masses)
    if len(m1s) != len(m2s):
        raise ModelError(
            f"channel_mass_1 and channel_mass_2 must have the same length, got {len(m1s)} and {len(m2s)}"
        )
    if not m1s or not poles:
        raise ModelError("barrier matrices require at least one channel and one pole")
    rows = []
    for m1, m2 in zip(m1s, m2s, strict=True):
        numerator = blatt_weisskopf_custom(breakup_momentum(s, m1, m2), l=l, q_r=q_r)
        rows.append([
            numerator / blatt_weisskopf_custom(breakup_momentum(as_expr(p) ** 2, m1, m2), l=l, q_r=q_r)
            for p in poles
        ])
    return matrix(rows)


def breit_wigner(s: ExprLike, *, mass: ExprLike, width: ExprLike) -> Expr:
    """Constant-width Breit-Wigner ``1 / (mass^2 - s - i mass width)`` (laddu's).

    Parameters
    ----------
    s : Expr, float or complex
        Squared invariant mass.
    mass, width : Expr or float
        Pole mass and width.

    Examples
    --------
    >>> import laddu_dask as ld
    >>> complex(ld.breit_wigner(2.0, mass=1.0, width=1.0).attr)
    (-0.5+0.5j)
    """
    s = _s(s)
    mass = _real(mass, "mass")
    width = _real(width, "width")
    if s.kind == "complex":
        return 1.0 / (mass * mass - s - 1j * (mass * width))
    return 1.0 / complex_(mass * mass - s, -(mass * width))


def relativistic_breit_wigner_custom(
    s: ExprLike,
    *,
    mass: ExprLike,
    width: ExprLike,
    mass1: ExprLike,
    mass2: ExprLike,
    l: object,  # noqa: E741
    barrier_factors: bool = True,
    q_r: ExprLike | None = None,
) -> Expr:
    """Relativistic Breit-Wigner with a chosen barrier (laddu's ``_custom``).

    ``1 / (M^2 - s - i M Gamma(s))``, ``Gamma(s) = Gamma0 (M / sqrt s) (q / q0) B_l(q)^2 /
    B_l(q0)^2`` with the full Blatt-Weisskopf factors of reference momentum ``q_r``, or
    ``Gamma0 (M / sqrt s) (q / q0)^(2l + 1)`` with ``barrier_factors=False``; ``q``, ``q0``
    the physical-sheet momenta at ``s`` and ``M^2``.  No numerator factor; ``i / (M Gamma0)``
    at ``s = M^2``.

    Parameters
    ----------
    s : Expr, float or complex
        Squared invariant mass.
    mass, width : Expr or float
        Pole mass and nominal width.
    mass1, mass2 : Expr or float
        Daughter masses.
    l : L, int, float or Fraction
        Orbital angular momentum, 0 to 8.
    barrier_factors : bool
        Include the Blatt-Weisskopf factors in the running width.
    q_r : Expr or float, optional
        Reference momentum in GeV (default 0.1973), real, positive and finite.

    Examples
    --------
    >>> import laddu_dask as ld
    >>> bw = ld.relativistic_breit_wigner_custom(2.25, mass=1.5, width=0.1, mass1=0.5, mass2=0.5,
    ...                                          l=6, barrier_factors=False)
    >>> abs(complex(bw.attr) - 1j / 0.15) < 1e-12
    True
    """
    l = _barrier_l(l)  # noqa: E741
    if not isinstance(barrier_factors, bool):
        raise ModelError(f"barrier_factors must be True or False, got {barrier_factors!r}")
    q_r = Q_R if q_r is None else _reference_momentum(q_r)
    s = _s(s)
    mass, width = _real(mass, "mass"), _real(width, "width")
    m1, m2 = _real(mass1, "mass1"), _real(mass2, "mass2")
    m_sq = mass * mass
    q = breakup_momentum(s, m1, m2)
    q0 = breakup_momentum(m_sq, m1, m2)
    if barrier_factors:
        ratio = _barrier_polynomial((q / q_r) ** 2, l) / _barrier_polynomial((q0 / q_r) ** 2, l)
        gamma = width * (mass / s.to_complex().sqrt()) * (q / q0) * ratio
    else:
        gamma = width * (mass / s.to_complex().sqrt()) * (q / q0) ** (2 * l + 1)
    return 1.0 / (m_sq - s - 1j * mass * gamma)


def relativistic_breit_wigner(
    s: ExprLike,
    *,
    mass: ExprLike,
    width: ExprLike,
    mass1: ExprLike,
    mass2: ExprLike,
    l: object = None,  # noqa: E741
) -> Expr:
    """Relativistic Breit-Wigner with Blatt-Weisskopf factors, ``q_r = 0.1973`` GeV (laddu's).

    :func:`relativistic_breit_wigner_custom` with ``barrier_factors=True`` and the default
    ``q_r``; ``l`` (0 to 8) defaults to the S wave.

    Examples
    --------
    >>> import laddu_dask as ld
    >>> bw = ld.relativistic_breit_wigner(1.5**2, mass=1.5, width=0.1, mass1=0.5, mass2=0.5, l=2)
    >>> complex(bw.attr) == 1j / (1.5 * 0.1)
    True
    """
    return relativistic_breit_wigner_custom(s, mass=mass, width=width, mass1=mass1, mass2=mass2,
                                            l=0 if l is None else l)


def flatte(
    s: ExprLike,
    *,
    mass: ExprLike,
    couplings: Sequence[ExprLike],
    channels: Sequence[tuple[ExprLike, ExprLike]],
) -> Expr:
    """Multi-channel Flatte amplitude ``1 / (M^2 - s - i M sum_k g_k rho_k(s))``.

    laddu 0.28.1 has no Flatte form; this is the standard one (Flatte 1976, as BES and LHCb
    write the f0(980) and a0(980)): couplings ``g_k`` in GeV, ``rho_k = 2 q_k / sqrt(s)`` of
    each channel on the physical sheet, so a closed channel (``rho_k = i |rho_k|``) shifts the
    real part.  Two channels give the usual two-channel Flatte.

    Parameters
    ----------
    s : Expr, float or complex
        Squared invariant mass.
    mass : Expr or float
        Nominal mass ``M``.
    couplings : sequence of Expr or float
        One coupling ``g_k`` per channel.
    channels : sequence of (mass1, mass2)
        The daughter masses of each channel.

    Examples
    --------
    >>> import laddu_dask as ld
    >>> f0 = ld.flatte(ld.scalar("s"), mass=0.965, couplings=[0.165, 0.694],
    ...                channels=[(0.13957, 0.13957), (0.493677, 0.493677)])
    >>> f0.kind
    'complex'
    """
    couplings, channels = list(couplings), list(channels)
    if len(couplings) != len(channels) or not channels:
        raise ModelError(
            f"flatte needs one coupling per channel and at least one channel, got "
            f"{len(couplings)} couplings and {len(channels)} channels"
        )
    s = _s(s)
    mass = _real(mass, "mass")
    width: Expr | None = None
    for k, (g, pair) in enumerate(zip(couplings, channels, strict=True)):
        if len(pair) != 2:
            raise ModelError(f"flatte channel {k} must be a pair of daughter masses, got {pair!r}")
        term = _real(g, f"couplings[{k}]") * rho(s, mass1=pair[0], mass2=pair[1])
        width = term if width is None else width + term
    return 1.0 / (mass * mass - s - 1j * mass * width)
