"""The polarized Zlm and the 3-channel K-matrix benchmark models, each written once.

Each model is one function of the library module (``laddu`` or ``laddu_dask``), so the
same lines build laddu's and laddu-dask's expression; both read the same Parquet files
of the KsKs benchmark sample (gamma p -> p K_S K_S), with the beam polarization added.

* :func:`zlm_model`: laddu's legacy GlueX amplitudes (``Zlm``, built from laddu 0.28.1's
  pieces, which has no ``Zlm``): S (l = 0) and D waves (l = 2, m = -1, 0, 1, 2) in both
  reflectivities, the decay angles of ``kshort1`` in the K_S K_S helicity frame, the beam
  polarization magnitude ``P`` and the angle ``Phi`` of its plane to the production
  plane (laddu's legacy ``PolAngle``);
  ``I = sum_r |sum_w c_w Re Z_w^r|^2 + |sum_w c_w Im Z_w^r|^2``, complex couplings, the
  positive-reflectivity S wave real and fixed (the reference), the negative one real;
  17 free parameters.
* :func:`kmatrix_model`: an S-wave K-matrix of three channels (pi+ pi-, K_S K_S,
  pi0 eta; masses from ``particles``) with two poles, P-vector production and the
  phase space ``-i diag(rho)``, ``I = |F_KK(s)|^2`` at ``s`` the K_S K_S mass squared;
  the six pole couplings and the second pole's complex production strength free (the
  first one real and fixed), 8 free parameters.  The third channel is pi0 eta, not
  eta eta: eta eta opens at 1.096 GeV, inside the sample's K_S K_S mass range (1 to
  2 GeV), and below a threshold laddu 0.28.1's ``Model`` drops the imaginary part of
  ``rho`` (the README's table), so the two libraries would not compute one function.
* :func:`angular_waves_model`: the 4-wave angular model of a mass-independent fit (no
  line shape: each mass bin has its own couplings), the waves the sample was drawn
  from, ``I = |Y_0^0 + sum_{m=0..2} c_m Y_2^m|^2`` in the K_S K_S helicity angles, the S
  wave real and fixed (the reference), the three D couplings complex and free in
  Cartesian form, bounded, with start ranges for ``sample_parameters``; 6 free
  parameters.  :func:`ksks_mass` is the binning variable (the K_S K_S mass).

Examples
--------
>>> import laddu_dask as ld
>>> from laddu_dask_bench.models import MODELS, angular_waves_model
>>> len(ld.Model(MODELS["zlm"](ld)).parameter_names), len(ld.Model(MODELS["kmatrix"](ld)).parameter_names)
(17, 8)
>>> angular_waves_model(ld).parameter_names[:2]
['d0 re', 'd0 im']
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from typing import Any

import numpy as np

#: Polarization columns added to the sample (the KsKs sample has none).
POLARIZATION_COLUMNS = ("pol_magnitude", "pol_angle")
#: The four GlueX orientations of the polarization plane (radians) and the magnitude range.
POL_ANGLES = tuple(math.radians(a) for a in (0.0, 45.0, 90.0, 135.0))
POL_MAGNITUDE = (0.3, 0.4)
#: Zlm waves: (name, l, m); each in both reflectivities.
ZLM_WAVES = (("S0", 0, 0), ("D-1", 2, -1), ("D0", 2, 0), ("D1", 2, 1), ("D2", 2, 2))
#: K-matrix poles (GeV) and their couplings to the three channels (initial values).
KMATRIX_POLES = (1.35, 1.52)
KMATRIX_COUPLINGS = ((0.5, 0.6), (0.3, 0.8), (0.2, -0.3))


def _helicity_angles(lib: Any) -> tuple[Any, Any, Any]:
    """``(s, costheta, phi)`` of ``kshort1`` in the K_S K_S rest frame (the KsKs sample's
    helicity frame: z along the K_S K_S momentum, y along beam x z)."""
    beam = lib.Vec4.event("beam")
    k1 = lib.Vec4.event("kshort1")
    x = k1 + lib.Vec4.event("kshort2")
    k = k1.boost(-x.beta()).vec3()
    z = x.vec3().unit()
    y = beam.vec3().cross(z).unit()
    costheta = k.dot(z) / k.mag()
    return x.m2(), costheta, lib.atan2(k.dot(y), k.dot(y.cross(z)))


def polarization_angle(lib: Any) -> Any:
    """laddu's legacy ``PolAngle``: the angle of the polarization plane (lab angle
    ``pol_angle``) to the production plane, ``atan2(y . e, unit(beam) . (e x y))`` with
    ``e = (cos a, sin a, 0)`` and ``y = unit(beam x (-recoil))``."""
    beam, recoil = lib.Vec3.event("beam"), lib.Vec3.event("proton")
    angle = lib.scalar("pol_angle")
    eps = lib.Vec3(angle.cos(), angle.sin(), 0.0)
    y = beam.cross(-recoil).unit()
    return lib.atan2(y.dot(eps), beam.unit().dot(eps.cross(y)))


def zlm_parts(lib: Any, l: int, m: int, r: str, costheta: Any, phi: Any, big_phi: Any) -> tuple[Any, Any]:  # noqa: E741
    """``(Re Z, Im Z)`` of laddu's legacy ``Zlm``: ``z = Y_l^m e^{-i Phi}``, the real part
    times ``sqrt(1 + P)`` and the imaginary part times ``sqrt(1 - P)`` for ``r = "+"`` (the
    other way round for ``"-"``)."""
    p = lib.scalar("pol_magnitude")
    z = lib.spherical_harmonic(l, m, costheta=costheta, phi=phi) * lib.cis(-big_phi)
    plus, minus = (1.0 + p).sqrt().real(), (1.0 - p).sqrt().real()
    re_f, im_f = (plus, minus) if r == "+" else (minus, plus)
    return re_f * z.real(), im_f * z.imag()


def _zlm_initial(name: str) -> complex:
    """A fixed, smooth spread of start values (not a fit result)."""
    k = sum(ord(c) for c in name)
    return complex(0.3 + 0.05 * (k % 7), 0.1 * ((k % 5) - 2))


def zlm_model(lib: Any) -> Any:
    """The polarized Zlm intensity (the module docstring) as ``lib``'s expression."""
    _, costheta, phi = _helicity_angles(lib)
    big_phi = polarization_angle(lib)
    intensity = None
    for r in ("+", "-"):
        re_sum = im_sum = None
        for name, l, m in ZLM_WAVES:  # noqa: E741
            wave = f"{name}{r}"
            if name == "S0":
                c = (lib.parameter(wave, fixed=1.0) if r == "+"
                     else lib.parameter(wave, initial=0.6))
            else:
                c = lib.cparameter(wave, initial=_zlm_initial(wave))
            re_z, im_z = zlm_parts(lib, l, m, r, costheta, phi, big_phi)
            re_sum = c * re_z if re_sum is None else re_sum + c * re_z
            im_sum = c * im_z if im_sum is None else im_sum + c * im_z
        term = re_sum.norm_sqr() + im_sum.norm_sqr()
        intensity = term if intensity is None else intensity + term
    return intensity


def kmatrix_model(lib: Any) -> Any:
    """The 3-channel, 2-pole K-matrix intensity (the module docstring) as ``lib``'s expression."""
    s, _, _ = _helicity_angles(lib)
    pt = lib.particles
    channels = ((pt.PI_PLUS.mass, pt.PI_MINUS.mass), (pt.K_SHORT.mass, pt.K_SHORT.mass),
                (pt.PI_ZERO.mass, pt.ETA.mass))
    masses = lib.vector(list(KMATRIX_POLES))
    g = lib.matrix([[lib.parameter(f"g{i}{a}", initial=KMATRIX_COUPLINGS[i][a]) for a in range(2)]
                    for i in range(3)])
    barriers = lib.blatt_weisskopf_barriers(
        s, channel_mass_1=lib.vector([m1 for m1, _ in channels]),
        channel_mass_2=lib.vector([m2 for _, m2 in channels]), pole_masses=masses, l=0)
    k = lib.k_matrix(s, pole_masses=masses, couplings=g, barriers=barriers,
                     background=lib.matrix([[0.1, 0.02, 0.0], [0.02, -0.1, 0.0], [0.0, 0.0, 0.05]]))
    beta = lib.vector([lib.parameter("beta0", fixed=1.0), lib.cparameter("beta1", initial=0.4 + 0.3j)])
    p = lib.p_vector(s, pole_masses=masses, production=beta, couplings=g, barriers=barriers)
    rho = [lib.rho(s, mass1=m1, mass2=m2) for m1, m2 in channels]
    phase_space = lib.matrix([[-1j * rho[i] if i == j else 0.0 for j in range(3)] for i in range(3)])
    f = lib.f_vector(s, pole_masses=masses, k=k, p=p, phase_space=phase_space)
    return f[1].norm_sqr()


#: The D-wave projections (m) of :func:`angular_waves_model`; their couplings' start range and bounds.
ANGULAR_D_WAVES = (0, 1, 2)
ANGULAR_START = (-1.0, 1.0)
ANGULAR_BOUNDS = (-10.0, 10.0)


def ksks_mass(lib: Any) -> Any:
    """The K_S K_S mass (GeV) as ``lib``'s expression: the binning variable of a
    mass-independent fit of the KsKs sample (``sqrt(m2)``, its real part: ``bin_by`` takes a real
    expression and laddu-dask's square root is complex)."""
    return (lib.Vec4.event("kshort1") + lib.Vec4.event("kshort2")).m2().sqrt().real()


def angular_waves_model(lib: Any) -> Any:
    """The 4-wave angular intensity (the module docstring) as ``lib``'s ``Model``."""
    _, costheta, phi = _helicity_angles(lib)
    amp = lib.spherical_harmonic(0, 0, costheta=costheta, phi=phi)
    for m in ANGULAR_D_WAVES:
        c = lib.complex(*(lib.parameter(f"d{m} {part}", initial=ANGULAR_START, bounds=ANGULAR_BOUNDS)
                          for part in ("re", "im")))
        amp = amp + c * lib.spherical_harmonic(2, m, costheta=costheta, phi=phi)
    return lib.Model(amp.norm_sqr())


#: The benchmark models by name.
MODELS: dict[str, Callable[[Any], Any]] = {"zlm": zlm_model, "kmatrix": kmatrix_model}


def with_polarization(source: str, outdir: str, seed: int) -> str:
    """``source`` with the beam polarization columns added, written once under ``outdir``.

    ``pol_angle`` cycles through :data:`POL_ANGLES` (event ``i`` gets ``i % 4``) and
    ``pol_magnitude`` is uniform in :data:`POL_MAGNITUDE` from ``seed``: the same arrays
    for every library.  Returns the new file's path (reused when it is newer than
    ``source``).
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    from laddu_dask.files import atomic_path

    path = os.path.join(outdir, os.path.basename(source).replace(".parquet", "-pol.parquet"))
    if os.path.exists(path) and os.path.getmtime(path) >= os.path.getmtime(source):
        return path
    table = pq.read_table(source)
    n = table.num_rows
    magnitude = np.random.default_rng(seed).uniform(*POL_MAGNITUDE, n)
    angle = np.asarray(POL_ANGLES)[np.arange(n) % len(POL_ANGLES)]
    table = table.append_column(POLARIZATION_COLUMNS[0], pa.array(magnitude))
    table = table.append_column(POLARIZATION_COLUMNS[1], pa.array(angle))
    row_group = pq.read_metadata(source).row_group(0).num_rows if n else None
    os.makedirs(outdir, exist_ok=True)
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp, row_group_size=row_group)
    return path


def polarized_sample(paths: dict[str, str], outdir: str) -> dict[str, str]:
    """The sample ``paths`` (``data``, ``accmc``) with the polarization columns added."""
    return {key: with_polarization(paths[key], outdir, seed) for key, seed in (("data", 11), ("accmc", 12))}


def parameter_names(model: str) -> list[str]:
    """The free parameters of benchmark model ``model`` in laddu-dask's order."""
    import laddu_dask as ld

    return list(ld.Model(MODELS[model](ld)).parameter_names)


def initial_point(model: str) -> list[float]:
    """The model's start values, in laddu-dask's parameter order."""
    import laddu_dask as ld

    return [float(v) for v in ld.Model(MODELS[model](ld)).default_parameters]


def likelihood(library: str, model: str, paths: dict[str, str], execution: Any = None,
               order: list[str] | None = None) -> Any:
    """The ``-2 ln L`` of benchmark model ``model`` on ``paths`` built with ``library``.

    laddu-dask's ``Likelihood`` (its default ``Execution()`` unless ``execution``), or
    laddu's (``execution``, for example ``laddu.Execution("jit", ...)``) behind
    :class:`~laddu_dask_bench.compare.SameOrder`, taking and returning parameters in
    ``order`` (default: laddu-dask's, :func:`parameter_names`).
    """
    if library == "laddu-dask":
        import laddu_dask as ld

        term = ld.NLL(ld.Model(MODELS[model](ld)), data=ld.read_parquet(paths["data"]),
                      accepted_mc=ld.read_parquet(paths["accmc"]), name=model)
        return ld.Likelihood([term], **({} if execution is None else {"execution": execution}))
    if library != "laddu":
        raise ValueError(f"library must be 'laddu-dask' or 'laddu', got {library!r}")
    import laddu

    from laddu_dask_bench.compare import SameOrder
    from laddu_dask_bench.laddu_ksks import laddu_nll

    nll = laddu_nll(laddu.Model(MODELS[model](laddu)), paths["data"], paths["accmc"],
                    execution=execution, name=model)
    return SameOrder(nll, parameter_names(model) if order is None else order)
