"""Coupled channels (laddu's tutorial "Sharing resonance parameters across channels"), and a K-matrix.

Every function takes the library module ``ld`` (``laddu`` or ``laddu_dask``) first and uses
only laddu 0.28.1's public API, so the same code builds the models with both.

Two reactions, gamma p -> X p with X -> pi+ pi- (channel A) and X -> K+ K- (channel B),
each its own dataset and likelihood term, joined in one ``Likelihood`` whose parameters
are shared by name:

* :func:`breit_wigner_models`, the tutorial's: one S-wave relativistic Breit-Wigner pole
  (``pole_mass``, ``pole_width`` shared), a fixed channel-A coupling and a free polar
  channel-B coupling;
* :func:`k_matrix_models`, the coupled-channel K-matrix: two poles coupling to both
  channels (the coupling matrix, pole masses and a K background shared), a P vector of
  production strengths, and the F vector ``(I + K C)^-1 P`` with ``C = -i diag(rho)``;
  channel A's intensity is ``|F_pipi|^2``, channel B's ``|F_KK|^2``, each at its own ``s``.
"""

from __future__ import annotations

import math

import numpy as np

from laddu_dask import ksks

from .topology import photoproduction

#: The two decay channels: (term name, daughter particles in ``ld.particles``).
CHANNELS = (("channel_a", ("PI_PLUS", "PI_MINUS")), ("channel_b", ("K_PLUS", "K_MINUS")))
#: Laddu 0.28.1's catalog masses of the daughters (GeV), for the event generator.
DAUGHTER_MASSES = {"PI_PLUS": 0.13957039, "PI_MINUS": 0.13957039, "K_PLUS": 0.493677, "K_MINUS": 0.493677}
#: Parameter points of the Breit-Wigner models, by name.
BW_POINTS = (
    {"pole_mass": 1.52, "pole_width": 0.12, "channel_b_magnitude": 0.5, "channel_b_phase": 0.0},
    {"pole_mass": 1.41, "pole_width": 0.31, "channel_b_magnitude": 1.3, "channel_b_phase": -1.2},
    {"pole_mass": 1.66, "pole_width": 0.04, "channel_b_magnitude": 0.2, "channel_b_phase": 2.9},
)
#: Parameter points of the K-matrix models, by name.
K_POINTS = (
    {"pole_1_mass": 1.30, "pole_2_mass": 1.75, "g_pipi_1": 0.8, "g_kk_1": 0.3, "g_pipi_2": 0.4,
     "g_kk_2": 0.9, "k_background": 0.1, "beta_2 real": 0.5, "beta_2 imag": 0.3},
    {"pole_1_mass": 1.25, "pole_2_mass": 1.60, "g_pipi_1": 1.1, "g_kk_1": -0.2, "g_pipi_2": 0.3,
     "g_kk_2": 0.6, "k_background": -0.4, "beta_2 real": -0.8, "beta_2 imag": 1.4},
    {"pole_1_mass": 1.45, "pole_2_mass": 1.95, "g_pipi_1": 0.5, "g_kk_1": 0.7, "g_pipi_2": -0.6,
     "g_kk_2": 0.2, "k_background": 0.25, "beta_2 real": 0.05, "beta_2 imag": -0.7},
)


def reaction(ld, name: str, daughters: tuple[str, str]):
    """gamma p -> X p, X -> d1 d2 (``ld.particles`` names) on the columns of :func:`events`."""
    return photoproduction(ld, name, (("d1", "daughter1", daughters[0]), ("d2", "daughter2", daughters[1])))


def reactions(ld):
    """``[channel A, channel B]``."""
    return [reaction(ld, name, daughters) for name, daughters in CHANNELS]


def breit_wigner_models(ld):
    """The tutorial's ``[model_a, model_b]``: one shared pole, one coupling per channel."""
    pole_mass = ld.parameter("pole_mass", initial=1.50, bounds=(1.30, 1.70), unit="GeV")
    pole_width = ld.parameter("pole_width", initial=0.15, bounds=(0.01, 0.50), unit="GeV")
    coupling_a = ld.complex(ld.parameter("channel_a_re", fixed=1.0), ld.parameter("channel_a_im", fixed=0.0))
    coupling_b = ld.polar_complex(
        ld.parameter("channel_b_magnitude", initial=0.5, bounds=(0.0, None)),
        ld.parameter("channel_b_phase", initial=0.0, bounds=(-math.pi, math.pi), periodic=True),
    )
    models = []
    for channel, coupling in zip(reactions(ld), (coupling_a, coupling_b)):
        line = ld.relativistic_breit_wigner(
            channel.s("X"),
            mass=pole_mass,
            width=pole_width,
            mass1=channel.particle("d1").mass,
            mass2=channel.particle("d2").mass,
            l=0,
        )
        models.append(ld.Model((coupling * line).norm_sqr()))
    return models


def f_vector(ld, channels, channel):
    """The K-matrix F vector at ``channel``'s ``s``; channels and poles share parameters by name."""
    s = channel.s("X")
    pole_masses = ld.vector(
        [ld.parameter(f"pole_{a}_mass", initial=m, bounds=(1.0, 2.2), unit="GeV")
         for a, m in ((1, 1.3), (2, 1.7))]
    )
    couplings = ld.matrix(
        [[ld.parameter(f"g_{c}_{a}", initial=0.5) for a in (1, 2)] for c in ("pipi", "kk")]
    )
    daughter_masses = [(ch.particle("d1").mass, ch.particle("d2").mass) for ch in channels]
    barriers = ld.blatt_weisskopf_barriers(
        s,
        channel_mass_1=ld.vector([m1 for m1, _ in daughter_masses]),
        channel_mass_2=ld.vector([m2 for _, m2 in daughter_masses]),
        pole_masses=pole_masses,
        l=0,
    )
    background = ld.parameter("k_background", initial=0.0)
    k = ld.k_matrix(
        s, pole_masses=pole_masses, couplings=couplings, barriers=barriers,
        background=ld.matrix([[background, 0.0], [0.0, 0.0]]),
    )
    production = ld.vector(
        [ld.complex(ld.parameter("beta_1_re", fixed=1.0), ld.parameter("beta_1_im", fixed=0.0)),
         ld.cparameter("beta_2", initial=0.5 + 0.5j)]
    )
    p = ld.p_vector(s, pole_masses=pole_masses, production=production, couplings=couplings, barriers=barriers)
    rho = [ld.rho(s, mass1=m1, mass2=m2) for m1, m2 in daughter_masses]
    phase_space = ld.matrix([[-1j * rho[0], 0.0], [0.0, -1j * rho[1]]])
    return ld.f_vector(s, pole_masses=pole_masses, k=k, p=p, phase_space=phase_space)


def k_matrix_models(ld):
    """``[model_a, model_b]``: ``|F_pipi|^2`` on channel A's events, ``|F_KK|^2`` on B's."""
    channels = reactions(ld)
    return [ld.Model(f_vector(ld, channels, channel)[i].norm_sqr()) for i, channel in enumerate(channels)]


def likelihood(ld, models, samples, extended: bool = False):
    """The joint likelihood of one term per channel; ``samples`` as :func:`samples` gives them."""
    term = ld.ExtendedNLL if extended else ld.NLL
    terms = []
    for model, (name, _), (data, mc) in zip(models, CHANNELS, samples):
        events_data, events_mc = ld.Dataset.from_arrays(**data), ld.Dataset.from_arrays(**mc)
        terms.append(term(model, data=events_data, accepted_mc=events_mc, name=name))
    return ld.Likelihood(terms)


def events(daughters: tuple[str, str], n: int, seed: int, weighted: bool = False) -> dict:
    """``{"p4s": ..., "scalars": {}, "weights": ...}`` for ``ld.Dataset.from_arrays(**events(...))``.

    Physical gamma p -> p X events (the toy generator's production: X mass flat in [1, 2]
    GeV, exponential |t|, a target proton at rest) with X decaying isotropically in its
    rest frame to ``daughters``. Four-vectors are ``(E, px, py, pz)`` rows, laddu's order.
    """
    rng = np.random.default_rng(seed)
    p4s, m, *_ = ksks.phase_space(n, rng)
    x = p4s["kshort1"] + p4s["kshort2"]
    m1, m2 = (DAUGHTER_MASSES[d] for d in daughters)
    q = ksks._breakup_momentum(m, m1, m2)
    costheta, phi = rng.uniform(-1.0, 1.0, n), rng.uniform(-math.pi, math.pi, n)
    sin = np.sqrt(1.0 - costheta**2)
    direction = np.column_stack([sin * np.cos(phi), sin * np.sin(phi), costheta])
    rest = np.column_stack([np.sqrt(q * q + m1 * m1), q[:, None] * direction])
    daughter1 = ksks._boost(rest, x[:, 1:] / x[:, :1])
    out = {
        "beam": p4s["beam"], "target": np.tile([ksks.M_PROTON, 0.0, 0.0, 0.0], (n, 1)),
        "recoil": p4s["proton"], "daughter1": daughter1, "daughter2": x - daughter1,
    }
    return {"p4s": out, "scalars": {}, "weights": rng.uniform(0.5, 1.5, n) if weighted else None}


def samples(n_data: int, n_mc: int, seed: int):
    """``[(data, accepted_mc), ...]`` per channel, as ``from_arrays`` keywords."""
    return [
        (events(daughters, n_data, seed + 2 * i, weighted=True), events(daughters, n_mc, seed + 2 * i + 1))
        for i, (_, daughters) in enumerate(CHANNELS)
    ]
