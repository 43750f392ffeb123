"""GlueX linearly-polarized photoproduction amplitudes as laddu's legacy ``Zlm`` and
``PolPhase`` defined them, built from ordinary expressions.

With ``Y_l^m(theta, phi)`` the decay angles' spherical harmonic, ``Phi`` the angle of the
beam polarization to the production plane and ``P`` the polarization magnitude:

* ``Zlm(name, l, m, r, angles, polarization)``: ``z = Y_l^m e^{-i Phi}``, and
  ``sqrt(1 + P) Re z + i sqrt(1 - P) Im z`` for reflectivity ``r = +``,
  ``sqrt(1 - P) Re z + i sqrt(1 + P) Im z`` for ``r = -``;
* ``PolPhase(name, polarization)``: ``P e^{2 i Phi}``.

``Phi`` is laddu's legacy ``PolAngle``: with the lab polarization direction
``e = (cos a, sin a, 0)`` and ``y = unit(beam x (-recoil))``,
``Phi = atan2(y . e, unit(beam) . (e x y))``.  Every piece is event-only, so both amplitudes
are computed once per event and cached.

Examples
--------
>>> import laddu_dask as ld
>>> pol = ld.Polarization("beam", "proton", pol_magnitude="pol_magnitude", pol_angle="pol_angle")
>>> angles = ld.Angles(ld.scalar("costheta"), ld.scalar("phi"))
>>> ld.Zlm("S0+", 0, 0, "+", angles, pol).kind, ld.PolPhase("phase", pol).kind
('complex', 'complex')
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from laddu_dask.errors import ModelError
from laddu_dask.expr.amplitudes import spherical_harmonic
from laddu_dask.expr.functions import atan2, cis, complex_
from laddu_dask.expr.node import Expr, ExprLike, as_expr, scalar
from laddu_dask.expr.quantum import Parity
from laddu_dask.expr.vectors import Vec3, Vec4


def _real(value: ExprLike | str, what: str) -> Expr:
    out = scalar(value) if isinstance(value, str) else as_expr(value)
    if out.kind != "real":
        raise ModelError(f"{what} must be real, got a complex expression")
    return out


def _vec4(value: Vec4 | str, what: str) -> Vec4:
    if isinstance(value, str):
        return Vec4.event(value)
    if not isinstance(value, Vec4):
        raise ModelError(f"{what} must be a Vec4 or the name of an event four-vector, got {value!r}")
    return value


@dataclass(frozen=True)
class Angles:
    """The decay angles a :func:`Zlm` is evaluated at: ``costheta`` and ``phi`` (real).

    Any object with ``costheta`` and ``phi`` attributes works the same way (for example
    angles from a frame); strings name event scalars.

    Examples
    --------
    >>> import laddu_dask as ld
    >>> ld.Angles("costheta", "phi").phi
    Expr(column 'phi')
    """

    costheta: Expr
    phi: Expr

    def __init__(self, costheta: ExprLike | str, phi: ExprLike | str) -> None:
        object.__setattr__(self, "costheta", _real(costheta, "Angles.costheta"))
        object.__setattr__(self, "phi", _real(phi, "Angles.phi"))


@dataclass(frozen=True)
class Polarization:
    """Linear beam polarization as laddu's legacy ``Polarization``: magnitude and angle.

    Parameters
    ----------
    beam, recoil : Vec4 or str
        The beam photon and the recoiling baryon (a name means ``Vec4.event(name)``).
    pol_magnitude : Expr or str
        The polarization magnitude ``P`` (a name means the event scalar of that name).
    pol_angle : Expr or str
        The lab angle of the polarization plane (radians), from which
        :attr:`pol_angle` (``Phi``, relative to the production plane) is computed.

    Attributes
    ----------
    pol_magnitude : Expr
        ``P``.
    pol_angle : Expr
        ``Phi``, the polarization angle relative to the production plane.

    Examples
    --------
    >>> import laddu_dask as ld
    >>> pol = ld.Polarization("beam", "proton", pol_magnitude="pol_magnitude", pol_angle="pol_angle")
    >>> pol.pol_magnitude
    Expr(column 'pol_magnitude')
    """

    pol_magnitude: Expr
    pol_angle: Expr

    def __init__(self, beam: Vec4 | str, recoil: Vec4 | str, *, pol_magnitude: ExprLike | str,
                 pol_angle: ExprLike | str) -> None:
        beam3 = _vec4(beam, "beam").momentum()
        recoil3 = _vec4(recoil, "recoil").momentum()
        lab = _real(pol_angle, "pol_angle")
        if isinstance(pol_magnitude, str) and isinstance(pol_angle, str) and pol_magnitude == pol_angle:
            raise ModelError("pol_magnitude and pol_angle must name different columns, "
                             f"both are {pol_angle!r}")
        eps = Vec3(lab.cos(), lab.sin(), 0.0)
        y = beam3.cross(-recoil3).unit()
        phi = atan2(y.dot(eps), beam3.unit().dot(eps.cross(y)))
        object.__setattr__(self, "pol_magnitude", _real(pol_magnitude, "pol_magnitude"))
        object.__setattr__(self, "pol_angle", phi)


def _attribute(obj: Any, name: str, what: str) -> Expr:
    if not hasattr(obj, name):
        raise ModelError(f"{what} must have a {name!r} attribute (an expression), got {obj!r}")
    return _real(getattr(obj, name), f"{what}.{name}")


def _reflectivity(r: Any) -> int:
    try:
        return Parity(r).value
    except ModelError:
        raise ModelError(f"reflectivity r must be '+' or '-' (or +1, -1, 'positive', "
                         f"'negative', a Parity), got {r!r}") from None


def _named(expr: Expr, name: str) -> Expr:
    """The amplitude tagged ``name`` where expressions carry tags (laddu's amplitude names)."""
    if not isinstance(name, str):
        raise ModelError(f"an amplitude name must be a string, got {name!r}")
    tagged = getattr(expr, "tagged", None)
    return tagged(name) if tagged is not None else expr


def Zlm(name: str, l: Any, m: Any, r: Any, angles: Any, polarization: Any) -> Expr:  # noqa: N802, E741
    """The GlueX polarized harmonic ``Z_l^m`` of reflectivity ``r`` (laddu's legacy ``Zlm``).

    ``z = Y_l^m(costheta, phi) e^{-i Phi}``; ``sqrt(1+P) Re z + i sqrt(1-P) Im z`` for
    ``r = +``, ``sqrt(1-P) Re z + i sqrt(1+P) Im z`` for ``r = -`` (``nan``, an error in
    a fit, where ``|P| > 1``).

    Parameters
    ----------
    name : str
        The amplitude's name.
    l, m : L, M, int
        Degree and order, ``|m| <= l``.
    r : str, int or Parity
        Reflectivity: ``"+"``/``"plus"``/``"pos"``/``"positive"`` or the negative names.
    angles : Angles
        Any object with ``costheta`` and ``phi`` (real expressions).
    polarization : Polarization
        Any object with ``pol_magnitude`` (``P``) and ``pol_angle`` (``Phi``).

    Examples
    --------
    >>> import laddu_dask as ld
    >>> pol = ld.Polarization("beam", "proton", pol_magnitude=0.0, pol_angle="pol_angle")
    >>> ld.Zlm("S0+", 0, 0, "+", ld.Angles(0.3, 0.1), pol).kind
    'complex'
    """
    sign = _reflectivity(r)
    ylm = spherical_harmonic(l, m, costheta=_attribute(angles, "costheta", "angles"),
                             phi=_attribute(angles, "phi", "angles"))
    p = _attribute(polarization, "pol_magnitude", "polarization")
    z = ylm * cis(-_attribute(polarization, "pol_angle", "polarization"))
    plus, minus = (1.0 + p) ** 0.5, (1.0 - p) ** 0.5
    re_f, im_f = (plus, minus) if sign > 0 else (minus, plus)
    return _named(complex_(re_f * z.real(), im_f * z.imag()), name)


def PolPhase(name: str, polarization: Any) -> Expr:  # noqa: N802
    """The polarization phase factor ``P e^{2 i Phi}`` (laddu's legacy ``PolPhase``).

    Parameters
    ----------
    name : str
        The amplitude's name.
    polarization : Polarization
        Any object with ``pol_magnitude`` (``P``) and ``pol_angle`` (``Phi``).

    Examples
    --------
    >>> import laddu_dask as ld
    >>> pol = ld.Polarization("beam", "proton", pol_magnitude="pol_magnitude", pol_angle="pol_angle")
    >>> ld.PolPhase("phase", pol).kind
    'complex'
    """
    p = _attribute(polarization, "pol_magnitude", "polarization")
    phi = _attribute(polarization, "pol_angle", "polarization")
    return _named(p * cis(2.0 * phi), name)
