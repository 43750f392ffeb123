"""The KsKs toy's intensity as a laddu-dask :class:`~laddu_dask.Model` (:func:`model`), the
decay angles as expressions of the columns (:func:`angle_expressions`) and the start values
and bounds of the demo and benchmark fits.

:mod:`laddu_dask.datasets.ksks` presents these names; the Generator's draws of the toy
(:mod:`laddu_dask.datasets.ksks_generation`) use :func:`model` for their data target.

Examples
--------
>>> from laddu_dask.datasets.ksks_model import model
>>> model().parameter_names[:2]
['s_mass', 's_width']
"""

from __future__ import annotations

from collections.abc import Mapping

from laddu_dask.datasets.ksks_physics import M_KS, TRUTH
from laddu_dask.errors import ParameterError
from laddu_dask.expr.amplitudes import spherical_harmonic as spherical_harmonic_expr
from laddu_dask.expr.functions import atan2, complex_
from laddu_dask.expr.lineshapes import breit_wigner, relativistic_breit_wigner
from laddu_dask.expr.node import Expr
from laddu_dask.expr.parameter import parameter
from laddu_dask.expr.vectors import Vec4
from laddu_dask.facade import Model

__all__ = ["BOUNDS", "START_SHIFT", "angle_expressions", "displaced_start", "model"]


def angle_expressions() -> tuple[Vec4, Vec4, Expr, Expr]:
    """The beam, X and the decay angles ``(costheta, phi)`` of ``kshort1`` as expressions of
    the columns, in the frame of :mod:`laddu_dask.datasets.ksks` (what
    :func:`~laddu_dask.datasets.ksks.angles` computes with NumPy)."""
    beam = Vec4.event("beam")
    k1, k2 = Vec4.event("kshort1"), Vec4.event("kshort2")
    x = k1 + k2
    k = k1.boost(-x.beta()).vec3()
    z = x.vec3().unit()
    y = beam.vec3().cross(z).unit()
    xaxis = y.cross(z)
    return beam, x, k.dot(z) / k.mag(), atan2(k.dot(y), k.dot(xaxis))


#: Relative displacement of the start values of the demo and benchmark fits from the truth.
START_SHIFT: dict[str, float] = {
    "s_mass": 1.02, "s_width": 1.25, "d_mass": 0.99, "d_width": 0.8,
    "d0_re": 0.7, "d0_im": 1.5, "d1_re": 1.3, "d1_im": 0.7, "d2_re": 1.4, "d2_im": 0.7,
}


def displaced_start(names: tuple[str, ...] | list[str] | None = None) -> dict[str, float]:
    """Start values of the demo and benchmark fits: the truth displaced by :data:`START_SHIFT`.

    Examples
    --------
    >>> from laddu_dask import ksks
    >>> round(ksks.displaced_start()["s_mass"], 5)
    1.53612
    """
    names = list(TRUTH) if names is None else list(names)
    return {n: TRUTH[n] * START_SHIFT[n] for n in names}


#: Fit bounds of the masses and widths (GeV); the coefficients are unbounded.
BOUNDS: dict[str, tuple[float, float]] = {
    "s_mass": (1.0, 2.0),
    "s_width": (0.01, 1.0),
    "d_mass": (1.0, 2.0),
    "d_width": (0.01, 1.0),
}


def model(
    lineshape: str = "bw",
    *,
    fixed_lineshapes: bool = False,
    initial: Mapping[str, float] | None = None,
):
    """The KsKs intensity as a laddu-dask :class:`~laddu_dask.Model`.

    ``I = | BW_S Y_0^0 + BW_D (c_0 Y_2^0 + c_1 Y_2^1 + c_2 Y_2^2) |^2`` with the angles of
    the module docstring (the two waves tagged ``"S"`` and ``"D"``), computed from the
    four-vector columns, so the model reads
    laddu's Parquet files directly.  Free parameters, in order: s_mass, s_width,
    d_mass, d_width, d0_re, d0_im, d1_re, d1_im, d2_re, d2_im.

    Parameters
    ----------
    lineshape : {"bw", "rbw"}
        Constant-width Breit-Wigner, or the relativistic one (l = 0 for S, 2 for D,
        K_S daughters).
    fixed_lineshapes : bool
        Fix masses and widths at their true values (only the six D-wave
        coefficients stay free).
    initial : mapping, optional
        Start values (default: the truth).

    Examples
    --------
    >>> from laddu_dask import ksks
    >>> ksks.model().parameter_names[:4]
    ['s_mass', 's_width', 'd_mass', 'd_width']
    >>> len(ksks.model(fixed_lineshapes=True).parameter_names)
    6
    """

    if lineshape not in ("bw", "rbw"):
        raise ValueError(f"lineshape must be 'bw' or 'rbw', got {lineshape!r}")
    start = dict(TRUTH)
    if initial is not None:
        unknown = set(initial) - set(TRUTH)
        if unknown:
            raise ParameterError(f"unknown KsKs parameter(s): {', '.join(sorted(unknown))}")
        start.update(initial)

    def par(name: str):
        if fixed_lineshapes and name in BOUNDS:
            return parameter(name, fixed=TRUTH[name])
        return parameter(name, initial=start[name], bounds=BOUNDS.get(name))

    _, x, costheta, phi = angle_expressions()
    s = x.m2()

    def line(mass: str, width: str, l: int):  # noqa: E741
        if lineshape == "bw":
            return breit_wigner(s, mass=par(mass), width=par(width))
        return relativistic_breit_wigner(
            s, mass=par(mass), width=par(width), mass1=M_KS, mass2=M_KS, l=l
        )

    s_wave = line("s_mass", "s_width", 0) * spherical_harmonic_expr(0, 0, costheta=costheta, phi=phi)
    d_line = line("d_mass", "d_width", 2)
    d_sum = None
    for m in range(3):
        c = complex_(par(f"d{m}_re"), par(f"d{m}_im"))
        term = c * spherical_harmonic_expr(2, m, costheta=costheta, phi=phi)
        d_sum = term if d_sum is None else d_sum + term
    # the waves are tagged (laddu's Expr.tagged) for projections and fit fractions; tags
    # change no bit of the compiled model
    return Model((s_wave.tagged("S") + (d_line * d_sum).tagged("D")).norm_sqr())
