"""An independent reference for the K_S K_S toy (``laddu_dask.datasets.ksks``), written for the tests.

The toy is specified by its physics (the benchmark's definition): gamma p -> p X, X -> K_S K_S,
beam 8.5 GeV along +z on a proton at rest, X flat in mass on [1, 2] GeV, |t| exponential with
slope 3 GeV^-2 between its kinematic limits, the decay angles of kshort1 in the X rest frame
with axes z = unit(X.vec3), y = unit(beam.vec3 x z), x = y x z (lab three-vectors), and the
intensity |BW_S Y_0^0 + BW_D sum_m c_m Y_2^m|^2 with BW(s; M, G) = 1 / (M^2 - s - i M G).

Everything here is computed another way than in ``laddu_dask.datasets.ksks``: the rest-frame boost as a
4x4 Lorentz matrix, cos(theta) also from Lorentz invariants alone, the spherical harmonics from
SciPy, the two-body momenta from the Kallen function, and the expectations of |t| and of the
proton's lab momentum as integrals (SciPy quadrature) of the generating densities rather than
as averages over generated events.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import integrate, special

#: PDG (2024): m(K_S) = 497.611 MeV, m(p) = 938.272 MeV (rounded to the keV).
M_KS = 0.497611
M_PROTON = 0.938272
#: The toy's beam energy (GeV), mass range of X (GeV) and |t| slope (GeV^-2).
E_BEAM = 8.5
MASS_RANGE = (1.0, 2.0)
T_SLOPE = 3.0


def kallen(a, b, c):
    """The Kallen function lambda(a, b, c) = a^2 + b^2 + c^2 - 2ab - 2bc - 2ca."""
    return a * a + b * b + c * c - 2 * a * b - 2 * b * c - 2 * c * a


def _minkowski(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return a[..., 0] * b[..., 0] - np.sum(a[..., 1:] * b[..., 1:], axis=-1)


def rest_frame_matrix(p: np.ndarray) -> np.ndarray:
    """The Lorentz matrices (n, 4, 4) taking four-vectors to the rest frame of ``p`` (n, 4)."""
    beta = p[:, 1:] / p[:, :1]
    b2 = np.sum(beta * beta, axis=1)
    gamma = 1.0 / np.sqrt(1.0 - b2)
    lam = np.empty((len(p), 4, 4))
    lam[:, 0, 0] = gamma
    lam[:, 0, 1:] = lam[:, 1:, 0] = -gamma[:, None] * beta
    lam[:, 1:, 1:] = np.eye(3) + ((gamma - 1.0) / b2)[:, None, None] * beta[:, :, None] * beta[:, None, :]
    return lam


def angles(p4: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(s, costheta, phi)`` of kshort1 in the X rest frame (boosted with a 4x4 matrix)."""
    x = p4["kshort1"] + p4["kshort2"]
    k = np.einsum("nij,nj->ni", rest_frame_matrix(x), p4["kshort1"])[:, 1:]
    z = x[:, 1:] / np.linalg.norm(x[:, 1:], axis=1, keepdims=True)
    y = np.cross(p4["beam"][:, 1:], z)
    y /= np.linalg.norm(y, axis=1, keepdims=True)
    xaxis = np.cross(y, z)
    kk = np.linalg.norm(k, axis=1)
    return (_minkowski(x, x), np.sum(k * z, axis=1) / kk,
            np.arctan2(np.sum(k * y, axis=1), np.sum(k * xaxis, axis=1)))


def costheta_invariant(p4: dict[str, np.ndarray]) -> np.ndarray:
    """cos(theta) of kshort1 from invariants: in the X rest frame the lab's time axis
    L = (1, 0, 0, 0) moves along -z, so cos(theta) = -k*.L* / (|k*| |L*|) (three-vectors)."""
    k, x = p4["kshort1"], p4["kshort1"] + p4["kshort2"]
    m2 = _minkowski(x, x)
    lab = np.zeros_like(x)
    lab[:, 0] = 1.0
    k0, l0 = _minkowski(k, x) / np.sqrt(m2), _minkowski(lab, x) / np.sqrt(m2)
    three_dot = k0 * l0 - _minkowski(k, lab)  # k*.L* of the spatial parts
    k_abs = np.sqrt(k0 * k0 - _minkowski(k, k))
    l_abs = np.sqrt(l0 * l0 - 1.0)
    return -three_dot / (k_abs * l_abs)


def ylm(l: int, m: int, costheta: np.ndarray, phi: np.ndarray) -> np.ndarray:
    """SciPy's spherical harmonic Y_l^m (Condon-Shortley phase)."""
    return special.sph_harm_y(l, m, np.arccos(costheta), phi)


def intensity(s, costheta, phi, p) -> np.ndarray:
    """|BW_S Y_0^0 + BW_D sum_{m=0..2} c_m Y_2^m|^2 of the parameters ``p`` (a mapping)."""

    def bw(mass, width):
        return 1.0 / (mass * mass - s - 1j * mass * width)

    d = sum(complex(p[f"d{m}_re"], p[f"d{m}_im"]) * ylm(2, m, costheta, phi) for m in range(3))
    amp = bw(p["s_mass"], p["s_width"]) * ylm(0, 0, costheta, phi) + bw(p["d_mass"], p["d_width"]) * d
    return np.abs(amp) ** 2


def abs_t_limits(m: float) -> tuple[float, float]:
    """The kinematic limits of |t| (photon -> X, target proton -> recoil proton) at X mass ``m``."""
    w2 = M_PROTON**2 + 2.0 * M_PROTON * E_BEAM
    k_in = math.sqrt(kallen(w2, 0.0, M_PROTON**2)) / (2.0 * math.sqrt(w2))
    p_out = math.sqrt(kallen(w2, m * m, M_PROTON**2)) / (2.0 * math.sqrt(w2))
    e_in_p = math.sqrt(k_in**2 + M_PROTON**2)
    e_out_p = math.sqrt(p_out**2 + M_PROTON**2)
    # t = (p_target - p_recoil)^2 between the two proton legs in the overall rest frame
    t_fwd = 2 * M_PROTON**2 - 2 * (e_in_p * e_out_p - k_in * p_out)
    t_bwd = 2 * M_PROTON**2 - 2 * (e_in_p * e_out_p + k_in * p_out)
    return -t_fwd, -t_bwd


def _t_density(abs_t: float, lo: float, hi: float) -> float:
    return T_SLOPE * math.exp(-T_SLOPE * (abs_t - lo)) / -math.expm1(-T_SLOPE * (hi - lo))


def expectation(f) -> float:
    """E[f(|t|)] of the generating distribution: m flat on MASS_RANGE, |t| exponential."""
    a, b = MASS_RANGE

    def given_m(m):
        lo, hi = abs_t_limits(m)
        return integrate.quad(lambda t: f(t) * _t_density(t, lo, hi), lo, hi, epsabs=0, epsrel=1e-11)[0]

    return integrate.quad(given_m, a, b, epsabs=0, epsrel=1e-10)[0] / (b - a)


def proton_lab_momentum(abs_t: float) -> float:
    """|p| of the recoil proton in the lab: t = 2 M^2 - 2 M E_p, so E_p = M + |t| / (2 M)."""
    e = M_PROTON + 0.5 * abs_t / M_PROTON
    return math.sqrt(e * e - M_PROTON**2)
