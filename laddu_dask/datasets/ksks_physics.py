"""The KsKs toy's constants, kinematics and physics: the true intensity, the acceptance
and the decay angles, with NumPy (what :mod:`laddu_dask.datasets.ksks` draws its sample
from and checks its model against).

Examples
--------
>>> import numpy as np
>>> from laddu_dask.datasets.ksks_physics import spherical_harmonic
>>> round(float(abs(spherical_harmonic(0, 0, np.array([0.3]), np.array([1.0]))[0]) ** 2 * 4 * np.pi), 12)
1.0
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping

import numpy as np

from laddu_dask.errors import ParameterError, SchemaError

M_PROTON = 0.938272
M_KS = 0.497611
#: Rows per Parquet row group of the files written here (partitions can then be read
#: without decoding much more than themselves).
ROW_GROUP_ROWS = 65_536
E_BEAM = 8.5
MASS_RANGE = (1.0, 2.0)
T_SLOPE = 3.0

#: Four-vector names, in column order.
P4_NAMES: tuple[str, ...] = ("beam", "proton", "kshort1", "kshort2")
_COMPONENTS = ("e", "px", "py", "pz")

#: Truth parameters of the toy model (c_S = 1 is fixed and not listed).
TRUTH: dict[str, float] = {
    "s_mass": 1.506,
    "s_width": 0.112,
    "d_mass": 1.517,
    "d_width": 0.086,
    "d0_re": 0.80,
    "d0_im": 0.30,
    "d1_re": -0.40,
    "d1_im": 0.50,
    "d2_re": 0.25,
    "d2_im": -0.35,
}
#: Free-parameter order of the model (laddu's first-seen order for the model as written).
PARAMETER_NAMES: tuple[str, ...] = tuple(TRUTH)


# --- kinematics helpers -------------------------------------------------------------


def _boost(p4: np.ndarray, beta: np.ndarray) -> np.ndarray:
    """Add velocity ``beta`` (n, 3) to four-vectors ``p4`` (n, 4) (laddu's ``boost``)."""
    b2 = np.einsum("ij,ij->i", beta, beta)
    gamma = 1.0 / np.sqrt(1.0 - b2)
    bp = np.einsum("ij,ij->i", beta, p4[:, 1:])
    out = np.empty_like(p4)
    out[:, 0] = gamma * (p4[:, 0] + bp)
    out[:, 1:] = p4[:, 1:] + (gamma * gamma / (gamma + 1.0) * bp + gamma * p4[:, 0])[:, None] * beta
    return out


def _unit(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


def _helicity_axes(beam: np.ndarray, x_p4: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return the (x, y, z) axes of the K_S K_S frame, each (n, 3)."""
    z = _unit(x_p4[:, 1:])
    y = _unit(np.cross(beam[:, 1:], z))
    return np.cross(y, z), y, z


def _breakup_momentum(m: np.ndarray, m1: float, m2: float) -> np.ndarray:
    s = m * m
    return np.sqrt(np.clip((s - (m1 + m2) ** 2) * (s - (m1 - m2) ** 2), 0.0, None)) / (2.0 * m)


# --- physics --------------------------------------------------------------------------


def spherical_harmonic(l: int, m: int, costheta: np.ndarray, phi: np.ndarray) -> np.ndarray:
    """Orthonormal spherical harmonic ``Y_l^m`` with the Condon-Shortley phase.

    ``Y_l^{-m} = (-1)^m conj(Y_l^m)``; ``sin(theta)`` is ``sqrt(1 - costheta^2)`` clipped
    at zero.

    Examples
    --------
    >>> import numpy as np
    >>> y00 = spherical_harmonic(0, 0, np.array([0.3]), np.array([1.0]))
    >>> bool(np.isclose(y00[0], 0.5 / np.sqrt(np.pi)))
    True
    """
    if l < 0 or abs(m) > l:
        raise ValueError(f"spherical harmonic needs |m| <= l and l >= 0, got l={l}, m={m}")
    x = np.asarray(costheta, dtype=np.float64)
    phi = np.asarray(phi, dtype=np.float64)
    am = abs(m)
    sin_t = np.sqrt(np.clip(1.0 - x * x, 0.0, None))
    # associated Legendre P_l^|m| with the (-1)^m phase, by upward recursion in l
    p_mm = np.ones_like(x)
    for k in range(am):
        p_mm = -(2 * k + 1) * sin_t * p_mm
    p_prev, p_cur = p_mm, p_mm
    if l > am:
        p_cur = (2 * am + 1) * x * p_mm
        for ll in range(am + 2, l + 1):
            p_prev, p_cur = p_cur, ((2 * ll - 1) * x * p_cur - (ll + am - 1) * p_prev) / (ll - am)
    ratio = math.factorial(l - am) / math.factorial(l + am)
    norm = math.sqrt((2 * l + 1) / (4.0 * math.pi) * ratio)
    y = norm * p_cur * np.exp(1j * am * phi)
    if m < 0:
        y = (-1) ** am * np.conj(y)
    return y


def _param(params: Mapping[str, float], name: str) -> float:
    try:
        return float(params[name])
    except KeyError:
        raise ParameterError(f"truth_intensity: missing parameter {name!r}") from None


def truth_intensity(
    s: np.ndarray,
    costheta: np.ndarray,
    phi: np.ndarray,
    params: Mapping[str, float] = TRUTH,
) -> np.ndarray:
    """Intensity ``|BW_S Y00 + BW_D sum_m c_Dm Y2m|^2`` with constant-width BWs.

    Parameters
    ----------
    s, costheta, phi : array_like
        Squared K_S K_S mass (GeV^2) and decay angles, broadcastable.
    params : mapping
        Values for every name in :data:`PARAMETER_NAMES` (default :data:`TRUTH`).

    Examples
    --------
    >>> import numpy as np
    >>> i = truth_intensity(np.array([1.506**2]), np.array([0.0]), np.array([0.0]))
    >>> bool(i[0] > 0)
    True
    """
    s = np.asarray(s, dtype=np.float64)
    p = {name: _param(params, name) for name in PARAMETER_NAMES}

    def bw(mass: float, width: float) -> np.ndarray:
        return 1.0 / (mass * mass - s - 1j * mass * width)

    d_part = sum(
        complex(p[f"d{m}_re"], p[f"d{m}_im"]) * spherical_harmonic(2, m, costheta, phi)
        for m in range(3)
    )
    amp = (
        bw(p["s_mass"], p["s_width"]) * spherical_harmonic(0, 0, costheta, phi)
        + bw(p["d_mass"], p["d_width"]) * d_part
    )
    return amp.real**2 + amp.imag**2


@functools.lru_cache(maxsize=4)
def _envelope(params: tuple[tuple[str, float], ...]) -> float:
    """Upper bound of the truth intensity on [1, 2] GeV (grid maximum with a margin)."""
    m = np.linspace(*MASS_RANGE, 1001)[:, None, None]
    ct = np.linspace(-1.0, 1.0, 41)[None, :, None]
    phi = np.linspace(-math.pi, math.pi, 49)[None, None, :]
    return 1.3 * float(truth_intensity(m * m, ct, phi, dict(params)).max())


def acceptance(costheta: np.ndarray, phi: np.ndarray, m: np.ndarray) -> np.ndarray:
    """Detector acceptance probability (at most 0.78) of an event.

    Examples
    --------
    >>> round(float(acceptance(0.0, 0.0, 1.0)), 12)
    0.28
    """
    return (
        0.5
        * (1.0 + 0.3 * np.asarray(costheta))
        * (1.0 - 0.2 * np.cos(2.0 * np.asarray(phi)))
        * (0.7 + 0.3 * (np.asarray(m) - MASS_RANGE[0]))
    )


def _check_p4(p4: Mapping[str, np.ndarray], names: tuple[str, ...]) -> dict[str, np.ndarray]:
    out = {}
    for name in names:
        if name not in p4:
            raise SchemaError(f"missing four-vector {name!r} (have {sorted(p4)})")
        arr = np.asarray(p4[name], dtype=np.float64)
        if arr.ndim != 2 or arr.shape[1] != 4:
            raise SchemaError(f"four-vector {name!r} must have shape (n, 4), got {arr.shape}")
        out[name] = arr
    n = {len(a) for a in out.values()}
    if len(n) > 1:
        raise SchemaError(f"four-vectors {list(names)} have different lengths {sorted(n)}")
    return out


def angles(p4: Mapping[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return ``(s, costheta, phi)`` of ``kshort1`` in the K_S K_S frame.

    Parameters
    ----------
    p4 : mapping
        Four-vectors (n, 4) in (E, px, py, pz) order; needs beam, kshort1, kshort2.

    Examples
    --------
    >>> from laddu_dask.datasets.ksks import generate
    >>> data, _ = generate(n_data=10, n_mc=0, seed=3)
    >>> s, costheta, phi = angles(data)
    >>> bool((abs(costheta) <= 1).all())
    True
    """
    v = _check_p4(p4, ("beam", "kshort1", "kshort2"))
    x_p4 = v["kshort1"] + v["kshort2"]
    s = x_p4[:, 0] ** 2 - np.einsum("ij,ij->i", x_p4[:, 1:], x_p4[:, 1:])
    k = _boost(v["kshort1"], -x_p4[:, 1:] / x_p4[:, :1])[:, 1:]
    ax, ay, az = _helicity_axes(v["beam"], x_p4)
    costheta = np.einsum("ij,ij->i", k, az) / np.linalg.norm(k, axis=1)
    phi = np.arctan2(np.einsum("ij,ij->i", k, ay), np.einsum("ij,ij->i", k, ax))
    return s, costheta, phi
