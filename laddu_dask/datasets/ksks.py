"""Toy gamma p -> p K_S K_S samples: generator, truth intensity and decay angles.

The physics follows the project's benchmark convention (``shared/bench/ksks.py``):

* production: a photon of 8.5 GeV on a proton at rest; the K_S K_S system ``X`` has a
  mass flat in [1, 2] GeV and a momentum transfer ``|t|`` drawn from ``exp(-3 |t|)``
  within its kinematic limits, with a flat azimuth;
* decay angles: those of ``kshort1`` in the ``X`` rest frame, reached by boosting by
  ``-beta`` of ``X`` (lab), with axes ``z = unit(X.vec3)``, ``y = unit(beam.vec3 x z)``,
  ``x = y x z``; ``costheta = k.z / |k|``, ``phi = atan2(k.y, k.x)``;
* acceptance: ``0.5 (1 + 0.3 costheta) (1 - 0.2 cos 2 phi) (0.7 + 0.3 (m - 1))``;
* truth intensity (constant-width Breit-Wigner ``BW(s; M, G) = 1 / (M^2 - s - i M G)``)::

      I = | BW(s; M_S, G_S) Y_0^0 + sum_{m=0..2} c_Dm BW(s; M_D, G_D) Y_2^m |^2

  with ``c_Dm = dm_re + i dm_im`` and the values of :data:`TRUTH`.

Data are drawn from ``acceptance x I`` and accepted Monte Carlo from ``acceptance``
alone (phase space flat in m and in the decay angles). Samples are written in laddu's
Parquet convention: ``NAME_e, NAME_px, NAME_py, NAME_pz`` for the four-vectors beam,
proton, kshort1, kshort2 (GeV, lab frame, target proton at rest) and ``weight``.

:func:`generate` (NumPy; the distributions of ``shared/bench/ksks.py``, not its draws) and
:func:`write_sample` draw the toy by hand; :func:`generate_datasets` draws the same
distributions with laddu-dask's :class:`~laddu_dask.Generator` on :func:`channel`, as Dask
work (see :mod:`laddu_dask.datasets.ksks_generation`).

Examples
--------
>>> from laddu_dask import ksks
>>> data, mc = ksks.generate(n_data=100, n_mc=200, seed=1)
>>> data["kshort1"].shape, mc["beam"].shape
((100, 4), (200, 4))
>>> s, costheta, phi = ksks.angles(data)
>>> bool(((s > 1.0) & (s < 4.0)).all())
True
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from laddu_dask.datasets.ksks_generation import (
    acceptance_expression,
    channel,
    generate_datasets,
    inverse_proposal_weight,
)
from laddu_dask.datasets.ksks_model import (  # noqa: F401 - the toy's model, ksks.NAME
    BOUNDS,
    START_SHIFT,
    angle_expressions,
    displaced_start,
    model,
)
from laddu_dask.datasets.ksks_physics import (  # noqa: F401 - the toy's constants and physics, ksks.NAME
    _COMPONENTS,
    E_BEAM,
    M_KS,
    M_PROTON,
    MASS_RANGE,
    P4_NAMES,
    PARAMETER_NAMES,
    ROW_GROUP_ROWS,
    T_SLOPE,
    TRUTH,
    _boost,
    _breakup_momentum,
    _envelope,
    _helicity_axes,
    acceptance,
    angles,
    spherical_harmonic,
    truth_intensity,
)
from laddu_dask.files import atomic_folder, atomic_path, atomic_write, check_output

__all__ = [
    "E_BEAM",
    "M_KS",
    "M_PROTON",
    "P4_NAMES",
    "PARAMETER_NAMES",
    "TRUTH",
    "acceptance",
    "acceptance_expression",
    "angles",
    "channel",
    "generate",
    "generate_datasets",
    "inverse_proposal_weight",
    "phase_space",
    "spherical_harmonic",
    "truth_intensity",
    "write_sample",
]

# --- generation -----------------------------------------------------------------------


def phase_space(
    n: int, rng: np.random.Generator
) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray, np.ndarray]:
    """Propose ``n`` events flat in m and in the decay angles, exponential in ``|t|``.

    Returns the lab four-vectors and the generated ``(m, costheta, phi)``.

    Examples
    --------
    >>> import numpy as np
    >>> p4, m, ct, phi = phase_space(5, np.random.default_rng(0))
    >>> p4["proton"].shape
    (5, 4)
    """
    m = rng.uniform(*MASS_RANGE, n)
    costheta = rng.uniform(-1.0, 1.0, n)
    phi = rng.uniform(-math.pi, math.pi, n)
    u_t = rng.uniform(0.0, 1.0, n)
    azimuth = rng.uniform(-math.pi, math.pi, n)

    # production in the overall centre-of-momentum frame (photon along +z)
    w2 = M_PROTON * (M_PROTON + 2.0 * E_BEAM)
    w = math.sqrt(w2)
    k_cm = (w2 - M_PROTON**2) / (2.0 * w)
    e_x = (w2 + m * m - M_PROTON**2) / (2.0 * w)
    p_x = np.sqrt(np.clip(e_x * e_x - m * m, 0.0, None))
    # t = m^2 - 2 k (E_X - p_X cos); |t| in [|t|(cos=1), |t|(cos=-1)], density exp(-b |t|)
    abs_t_lo = 2.0 * k_cm * (e_x - p_x) - m * m
    abs_t_hi = 2.0 * k_cm * (e_x + p_x) - m * m
    abs_t = abs_t_lo - np.log1p(u_t * np.expm1(-T_SLOPE * (abs_t_hi - abs_t_lo))) / T_SLOPE
    cos_cm = np.clip((2.0 * k_cm * e_x - m * m - abs_t) / (2.0 * k_cm * p_x), -1.0, 1.0)
    sin_cm = np.sqrt(1.0 - cos_cm * cos_cm)
    dir_x = np.column_stack([sin_cm * np.cos(azimuth), sin_cm * np.sin(azimuth), cos_cm])
    x_cm = np.column_stack([e_x, p_x[:, None] * dir_x])
    proton_cm = np.column_stack([np.sqrt(p_x * p_x + M_PROTON**2), -p_x[:, None] * dir_x])
    to_lab = np.zeros((n, 3))
    to_lab[:, 2] = E_BEAM / (E_BEAM + M_PROTON)
    x_lab = _boost(x_cm, to_lab)
    proton = _boost(proton_cm, to_lab)
    beam = np.zeros((n, 4))
    beam[:, 0] = beam[:, 3] = E_BEAM

    # K_S K_S decay in the helicity frame, then to the lab
    q = _breakup_momentum(m, M_KS, M_KS)
    ax, ay, az = _helicity_axes(beam, x_lab)
    sin_t = np.sqrt(1.0 - costheta * costheta)
    k_dir = (sin_t * np.cos(phi))[:, None] * ax + (sin_t * np.sin(phi))[:, None] * ay
    k_dir += costheta[:, None] * az
    k_rest = np.column_stack([np.sqrt(q * q + M_KS**2), q[:, None] * k_dir])
    kshort1 = _boost(k_rest, x_lab[:, 1:] / x_lab[:, :1])
    kshort2 = x_lab - kshort1
    p4 = {"beam": beam, "proton": proton, "kshort1": kshort1, "kshort2": kshort2}
    return p4, m, costheta, phi


def _draw(rng: np.random.Generator, n: int, weighted_by_truth: bool) -> dict[str, np.ndarray]:
    """Accept-reject ``n`` events from acceptance (x truth intensity if asked)."""
    envelope = _envelope(tuple(TRUTH.items())) if weighted_by_truth else 1.0
    kept: list[dict[str, np.ndarray]] = []
    have, rate = 0, 0.05 if weighted_by_truth else 0.3
    while have < n:
        batch = int(min(max(1.2 * (n - have) / rate, 1_000), 500_000))
        p4, m, ct, phi = phase_space(batch, rng)
        keep = rng.uniform(0.0, 1.0, batch) < acceptance(ct, phi, m)
        if weighted_by_truth:
            inten = truth_intensity(m * m, ct, phi)
            if inten.max() > envelope:  # pragma: no cover - guarded by the grid margin
                raise RuntimeError("truth intensity exceeds its sampling envelope")
            keep &= rng.uniform(0.0, envelope, batch) < inten
        n_keep = int(keep.sum())
        rate = max(n_keep / batch, 1e-3)
        kept.append({k: v[keep] for k, v in p4.items()})
        have += n_keep
    return {name: np.concatenate([c[name] for c in kept])[:n] for name in P4_NAMES}


def _empty() -> dict[str, np.ndarray]:
    return {name: np.zeros((0, 4)) for name in P4_NAMES}


def generate(
    n_data: int = 100_000, n_mc: int = 1_000_000, seed: int = 12345
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Generate a data sample (acceptance x truth) and an accepted-MC sample (acceptance).

    Deterministic for a given ``(n_data, n_mc, seed)``.

    Returns
    -------
    data, accmc : dict
        ``name -> (n, 4)`` float64 arrays for :data:`P4_NAMES` (lab frame, GeV).

    Examples
    --------
    >>> data, mc = generate(n_data=20, n_mc=30, seed=7)
    >>> sorted(data) == sorted(P4_NAMES), len(mc["kshort2"])
    (True, 30)
    """
    for label, n in (("n_data", n_data), ("n_mc", n_mc)):
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
            raise ValueError(f"{label} must be a non-negative integer, got {n!r}")
    rng = np.random.default_rng(seed)
    data = _draw(rng, int(n_data), True) if n_data else _empty()
    mc = _draw(rng, int(n_mc), False) if n_mc else _empty()
    return data, mc


def _table(p4: Mapping[str, np.ndarray]) -> pa.Table:
    cols: dict[str, np.ndarray] = {}
    for name in P4_NAMES:
        for j, comp in enumerate(_COMPONENTS):
            cols[f"{name}_{comp}"] = np.ascontiguousarray(p4[name][:, j], dtype=np.float64)
    cols["weight"] = np.ones(len(p4[P4_NAMES[0]]))
    return pa.table(cols)


def _write_atomic(table: pa.Table, path: str, parts: int) -> str:
    """Write one file (``parts == 1``) or a folder of ``parts`` files, replacing ``path``."""
    if parts == 1:
        with atomic_path(path) as tmp:
            pq.write_table(table, tmp, row_group_size=ROW_GROUP_ROWS, write_page_checksum=True)
        return path
    with atomic_folder(path) as tmp_dir:
        edges = np.linspace(0, table.num_rows, parts + 1).astype(int)
        for i in range(parts):
            part = table.slice(edges[i], edges[i + 1] - edges[i])
            pq.write_table(part, os.path.join(tmp_dir, f"part-{i:04d}.parquet"),
                           row_group_size=ROW_GROUP_ROWS, write_page_checksum=True)
    return path


def write_sample(
    outdir: str | os.PathLike[str],
    n_data: int = 100_000,
    n_mc: int = 1_000_000,
    seed: int = 12345,
    parts: int = 1,
) -> dict[str, str]:
    """Generate and write ``data``, ``accmc`` and ``truth.json`` under ``outdir``.

    With ``parts == 1`` the samples are ``data.parquet`` and ``accmc.parquet``; with
    ``parts > 1`` they are folders ``data/`` and ``accmc/`` of ``part-NNNN.parquet``
    files. Every file is written to a temporary name and moved into place; a folder
    replaces only an earlier output (:func:`~laddu_dask.files.check_output`, checked for
    both samples before anything is written).

    Returns
    -------
    dict
        Paths under the keys ``"data"``, ``"accmc"`` and ``"truth"``.

    Examples
    --------
    >>> import tempfile
    >>> paths = write_sample(tempfile.mkdtemp(), n_data=50, n_mc=80, seed=2)
    >>> sorted(paths)
    ['accmc', 'data', 'truth']
    """
    if isinstance(parts, bool) or not isinstance(parts, (int, np.integer)) or parts < 1:
        raise ValueError(f"parts must be a positive integer, got {parts!r}")
    outdir = os.fspath(outdir)
    os.makedirs(outdir, exist_ok=True)
    suffix = ".parquet" if parts == 1 else ""
    for name in ("data", "accmc"):  # every target is checked before anything is written
        check_output(os.path.join(outdir, name + suffix), folder=parts > 1)
    data, mc = generate(n_data, n_mc, seed)
    paths = {
        "data": _write_atomic(_table(data), os.path.join(outdir, "data" + suffix), int(parts)),
        "accmc": _write_atomic(_table(mc), os.path.join(outdir, "accmc" + suffix), int(parts)),
    }
    truth = os.path.join(outdir, "truth.json")
    with atomic_write(truth) as f:
        json.dump(TRUTH, f, indent=2)
    paths["truth"] = truth
    return paths
