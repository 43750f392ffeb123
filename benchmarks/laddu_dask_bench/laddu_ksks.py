"""The K_S K_S likelihood built with laddu itself (the tests' oracle, the benchmarks' competitor).

It builds, in laddu 0.28 (an optional dependency, imported only when called),
the toy gamma p -> p K_S K_S intensity of ``laddu_dask.datasets.ksks`` (and of the shared
benchmark generator)::

    I = | BW_S(s) Y_0^0 + BW_D(s) sum_{m=0..2} c_Dm Y_2^m |^2,   c_S = 1 (fixed)

with the angles of ``kshort1`` in the K_S K_S rest frame (boost by ``-beta`` of
``X = kshort1 + kshort2``; ``z = unit(X.vec3)``, ``y = unit(beam.vec3 x z)``,
``x = y x z``; ``costheta = k.z / |k|``, ``phi = atan2(k.y, k.x)``) and
``s = X.m2()``.

Examples
--------
>>> from laddu_dask_bench.laddu_ksks import laddu_available, laddu_ksks_nll, TRUTH
>>> if laddu_available():                                   # doctest: +SKIP
...     nll = laddu_ksks_nll("data.parquet", "accmc.parquet", lineshape="rbw")
...     value, grad = nll.value_and_gradient(TRUTH)
"""

from __future__ import annotations

import glob
import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

# the sample's numbers (truth, bounds, the K_S mass) are data shared with the generator
from laddu_dask.datasets.ksks import BOUNDS, M_KS, TRUTH  # noqa: E402

#: Free-parameter order of the reference likelihood (all ten free).
PARAMETER_NAMES: tuple[str, ...] = tuple(TRUTH)
#: Lineshape parameters, fixed at truth when ``fixed_lineshapes=True``.
LINESHAPE_NAMES: tuple[str, ...] = ("s_mass", "s_width", "d_mass", "d_width")
#: Free-parameter order when the lineshapes are fixed.
COEFFICIENT_NAMES: tuple[str, ...] = tuple(n for n in TRUTH if n not in LINESHAPE_NAMES)

LINESHAPES = ("bw", "rbw")


def laddu_available() -> bool:
    """Return whether laddu (0.28 API: ``Vec4.event``, ``Likelihood``) can be imported.

    Examples
    --------
    >>> isinstance(laddu_available(), bool)
    True
    """
    try:
        import laddu
    except ImportError:
        return False
    needed = ("Vec4", "Likelihood", "NLL", "relativistic_breit_wigner")
    return all(hasattr(laddu, n) for n in needed)


def ksks_angles_expr() -> tuple[Any, Any, Any]:
    """Return laddu expressions ``(s, costheta, phi)`` of the K_S K_S toy.

    Examples
    --------
    >>> s, costheta, phi = ksks_angles_expr()               # laddu expressions (needs laddu)
    """
    import laddu as ld

    beam = ld.Vec4.event("beam")
    k1 = ld.Vec4.event("kshort1")
    x = k1 + ld.Vec4.event("kshort2")
    k = k1.boost(-x.beta()).vec3()
    z = x.vec3().unit()
    y = beam.vec3().cross(z).unit()
    xa = y.cross(z)
    costheta = k.dot(z) / k.mag()
    phi = ld.atan2(k.dot(y), k.dot(xa))
    return x.m2(), costheta, phi


def ksks_intensity_expr(lineshape: str = "bw", fixed_lineshapes: bool = False) -> Any:
    """Return the laddu intensity expression of the K_S K_S toy.

    Parameters
    ----------
    lineshape : {"bw", "rbw"}
        ``"bw"``: constant-width ``breit_wigner(s, mass, width)``; ``"rbw"``:
        ``relativistic_breit_wigner`` with daughters ``M_KS, M_KS`` and ``l = 0``
        (S) or ``l = 2`` (D).
    fixed_lineshapes : bool
        Fix masses and widths at :data:`TRUTH`.

    Examples
    --------
    >>> expr = ksks_intensity_expr("rbw")                   # a laddu expression (needs laddu)
    """
    import laddu as ld

    if lineshape not in LINESHAPES:
        raise ValueError(f"lineshape must be one of {LINESHAPES}, got {lineshape!r}")

    def par(name: str) -> Any:
        if fixed_lineshapes and name in LINESHAPE_NAMES:
            return ld.parameter(name, fixed=TRUTH[name])
        return ld.parameter(name, initial=TRUTH[name], bounds=BOUNDS.get(name))

    s, costheta, phi = ksks_angles_expr()

    def lineshape_expr(mass: Any, width: Any, l: int) -> Any:
        if lineshape == "bw":
            return ld.breit_wigner(s, mass=mass, width=width)
        return ld.relativistic_breit_wigner(s, mass=mass, width=width, mass1=M_KS, mass2=M_KS, l=l)

    # Written so that laddu's first-seen parameter order equals PARAMETER_NAMES.
    bw_s = lineshape_expr(par("s_mass"), par("s_width"), 0)
    bw_d = lineshape_expr(par("d_mass"), par("d_width"), 2)
    d_sum = None
    for m in range(3):
        c = ld.complex(par(f"d{m}_re"), par(f"d{m}_im"))
        term = c * ld.spherical_harmonic(2, m, costheta=costheta, phi=phi)
        d_sum = term if d_sum is None else d_sum + term
    amp = bw_s * ld.spherical_harmonic(0, 0, costheta=costheta, phi=phi) + bw_d * d_sum
    return amp.norm_sqr()


def _dataset(source: Any) -> Any:
    """Open a laddu Dataset from a Parquet file, a folder of them, a glob or a p4 dict."""
    import laddu as ld

    if isinstance(source, Mapping):
        p4s = {
            k: np.ascontiguousarray(v, dtype=np.float64) for k, v in source.items() if k != "weight"
        }
        weights = source.get("weight")
        return ld.Dataset.from_arrays(p4s=p4s, scalars={}, weights=weights)
    path = os.fspath(source)
    if os.path.isdir(path):
        # laddu 0.28.1 rejects a directory ("Is a directory") despite its docs; use a glob.
        if not glob.glob(os.path.join(path, "*.parquet")):
            raise FileNotFoundError(f"no *.parquet files in folder {path!r}")
        path = os.path.join(path, "*.parquet")
    return ld.read_parquet(path)


class LadduKsKsNLL:
    """laddu ``-2 ln L`` (``NLL``) of the K_S K_S toy, with a name-aware parameter interface.

    It has the methods :func:`laddu_dask.fit` uses (``parameter_names``, ``resolve``,
    ``bounds``, ``value``, ``value_and_gradient``), so the same MIGRAD driver fits it.

    Attributes
    ----------
    parameter_names : list of str
        Free parameters, in laddu's order (equal to :data:`PARAMETER_NAMES` or
        :data:`COEFFICIENT_NAMES`).
    likelihood, model : laddu.Likelihood, laddu.Model
        The underlying laddu objects.
    limits : mapping of str to (low, high), optional
        The bounds :meth:`bounds` gives (default: the KsKs sample's, :data:`BOUNDS`).
    """

    def __init__(self, likelihood: Any, model: Any,
                 limits: Mapping[str, tuple[float | None, float | None]] | None = None) -> None:
        self.likelihood = likelihood
        self.model = model
        self.limits = BOUNDS if limits is None else dict(limits)
        self.parameter_names: list[str] = list(likelihood.parameter_names)
        self.fixed_names: tuple[str, ...] = tuple(model.fixed_parameters)

    def vector(self, p: Mapping[str, float] | Sequence[float] | np.ndarray) -> np.ndarray:
        """Free-parameter vector from a mapping (extra fixed names ignored) or a sequence."""
        if isinstance(p, Mapping):
            unknown = sorted(set(p) - set(self.parameter_names) - set(self.fixed_names))
            if unknown:
                raise KeyError(f"unknown parameter(s) {unknown}; free: {self.parameter_names}")
            missing = [n for n in self.parameter_names if n not in p]
            if missing:
                raise KeyError(f"missing value(s) for parameter(s) {missing}")
            return np.array([float(p[n]) for n in self.parameter_names])
        vec = np.asarray(p, dtype=np.float64).reshape(-1)
        if vec.size != len(self.parameter_names):
            raise ValueError(
                f"expected {len(self.parameter_names)} values "
                f"({self.parameter_names}), got {vec.size}"
            )
        return vec

    def resolve(self, p: Mapping[str, float] | Sequence[float] | np.ndarray) -> np.ndarray:
        """Free-parameter vector (the name :func:`laddu_dask.fit` asks for; see :meth:`vector`)."""
        return self.vector(p)

    def bounds(self) -> list[tuple[float | None, float | None]]:
        """Bounds of the free parameters, in order (those the laddu parameters were given)."""
        return [self.limits.get(n, (None, None)) for n in self.parameter_names]

    def value(self, p: Mapping[str, float] | Sequence[float] | np.ndarray) -> float:
        """Return ``-2 ln L`` at ``p``."""
        return float(self.likelihood.value(self.vector(p)))

    def value_and_gradient(
        self, p: Mapping[str, float] | Sequence[float] | np.ndarray
    ) -> tuple[float, np.ndarray]:
        """Return ``-2 ln L`` and its gradient (in :attr:`parameter_names` order) at ``p``."""
        value, grad = self.likelihood.value_and_gradient(self.vector(p))
        return float(value), np.asarray(grad, dtype=np.float64)


def laddu_ksks_nll(
    data_path: Any,
    mc_path: Any,
    lineshape: str = "bw",
    fixed_lineshapes: bool = False,
    execution: Any = None,
) -> LadduKsKsNLL:
    """Build the laddu K_S K_S likelihood on a data and an accepted-MC sample.

    Parameters
    ----------
    data_path, mc_path : str, os.PathLike or mapping
        Parquet file, folder of ``*.parquet`` files, glob, or a dict ``name -> (n, 4)``
        array (with an optional ``"weight"`` array).
    lineshape : {"bw", "rbw"}
        Constant-width or relativistic Breit-Wigner lineshapes.
    fixed_lineshapes : bool
        Fix masses and widths at :data:`TRUTH`; only the six D-wave coefficients are free.
    execution : laddu.Execution, optional
        For example ``laddu.Execution("jit", threads=2, precision="f64")``.

    Returns
    -------
    LadduKsKsNLL

    Examples
    --------
    With a sample written by ``ksks.write_sample`` (``tests/datasets/test_ksks_generator.py`` fits one)::

        nll = laddu_ksks_nll("data.parquet", "accmc.parquet")
        nll.value(TRUTH)
    """
    import laddu as ld

    model = ld.Model(ksks_intensity_expr(lineshape, fixed_lineshapes))
    expected = list(COEFFICIENT_NAMES if fixed_lineshapes else PARAMETER_NAMES)
    if list(model.parameter_names) != expected:
        raise RuntimeError(f"unexpected laddu parameter order {model.parameter_names}")
    return laddu_nll(model, data_path, mc_path, execution=execution, name="ksks")


def laddu_nll(model: Any, data_path: Any, mc_path: Any, execution: Any = None,
              name: str = "ksks") -> LadduKsKsNLL:
    """laddu's ``NLL`` of ``model`` (a ``laddu.Model``) on a data and an accepted-MC sample
    (paths as :func:`laddu_ksks_nll` takes them), in one ``Likelihood`` on ``execution``.

    Examples
    --------
    With a laddu expression ``expr`` and a sample written by ``ksks.write_sample``::

        import laddu
        nll = laddu_nll(laddu.Model(expr), "data.parquet", "accmc.parquet")
    """
    import laddu as ld

    term = ld.NLL(model, data=_dataset(data_path), accepted_mc=_dataset(mc_path), name=name)
    return LadduKsKsNLL(ld.Likelihood([term], execution=execution), model)
