"""laddu's tutorial models, written once in laddu's spelling, built with laddu and laddu-dask.

The model code lives in ``tests/tutorial_models/``: every function there takes the library
module first, so one function builds the model with ``laddu`` 0.28.1 and with
``laddu_dask``. Both sides get the same events (the same NumPy arrays through
``Dataset.from_arrays``), and their likelihoods must agree at several parameter points:
the value to 1e-12 relative and every gradient component to 1e-10 of the largest one, the
parameters matched by name (the libraries may order them differently).

* polarized photoproduction: gamma p -> X p, X -> K_S K_S, S and D waves through
  sequential helicity amplitudes (Wigner D of production and decay angles from a declared
  topology, Clebsch-Gordan couplings), the two photon helicities contracted with the 2x2
  linear-polarization density matrix; weighted data;
* coupled channels: pi+ pi- and K+ K- reactions in one joint likelihood whose terms share
  parameters by name: the tutorial's shared Breit-Wigner pole, and a two-pole K-matrix
  with P-vector production, with ``NLL`` and ``ExtendedNLL`` terms.

A property that does not need laddu checks the density-matrix contraction itself: turning
the polarization plane by 90 degrees flips the sign of the polarized part, so the two
intensities average to the unpolarized one.
"""

from __future__ import annotations

import numpy as np
import pytest
from laddu_reference import agreement, laddu, needs_laddu
from tutorial_models import coupled_channel, polarized

import laddu_dask as ld
from laddu_dask.expr.graph import walk


def _agreement(ours, theirs, points):
    """``(value, gradient)`` worst relative differences of two likelihoods over ``points``."""
    names = list(theirs.parameter_names)
    assert sorted(ours.parameter_names) == sorted(names)
    worst_value = worst_gradient = 0.0
    for point in points:
        value, grad = ours.value_and_gradient({n: point[n] for n in ours.parameter_names})
        want_value, want_grad = theirs.value_and_gradient([point[n] for n in names])
        grad = dict(zip(ours.parameter_names, np.asarray(grad)))
        want = np.asarray(want_grad)
        got = np.array([grad[n] for n in names])
        worst_value = max(worst_value, abs(value - want_value) / abs(want_value))
        worst_gradient = max(worst_gradient, float(np.max(np.abs(got - want)) / np.max(np.abs(want))))
    return worst_value, worst_gradient


def _polarized_likelihood(lib):
    data = lib.Dataset.from_arrays(**polarized.events(2000, 11, weighted=True))
    mc = lib.Dataset.from_arrays(**polarized.events(3000, 12))
    return lib.Likelihood([lib.NLL(polarized.build_model(lib), data=data, accepted_mc=mc, name="polarized")])


@needs_laddu
def test_polarized_photoproduction_nll_and_gradient_match_laddu():
    ours, theirs = _polarized_likelihood(ld), _polarized_likelihood(laddu)
    # the reference coupling is fixed: it is no free parameter on either side
    assert "s_wave_re" not in ours.parameter_names and "s_wave_re" not in theirs.parameter_names
    value, gradient = _agreement(ours, theirs, polarized.POINTS)
    assert value < 1e-12 and gradient < 1e-10, (value, gradient)


@needs_laddu
@pytest.mark.parametrize("extended", [False, True], ids=["NLL", "ExtendedNLL"])
@pytest.mark.parametrize(
    ("build", "points"),
    [(coupled_channel.breit_wigner_models, coupled_channel.BW_POINTS),
     (coupled_channel.k_matrix_models, coupled_channel.K_POINTS)],
    ids=["shared-pole", "k-matrix"],
)
def test_coupled_channel_joint_likelihood_matches_laddu(build, points, extended):
    samples = coupled_channel.samples(1500, 2500, seed=5)
    ours = coupled_channel.likelihood(ld, build(ld), samples, extended=extended)
    theirs = coupled_channel.likelihood(laddu, build(laddu), samples, extended=extended)
    # One parameter per name across both terms (the pole is shared, not duplicated). The
    # K-matrix's pole-mass derivatives are the least well-conditioned figures: laddu's
    # pole-cleared solve loses 1/(m^2 - s)^2 in them near a pole (ours keeps 1e-13 of a
    # 50-digit evaluation there, tests/expr/test_kmatrix.py); this sample has no event that close.
    assert len(ours.parameter_names) == len(set(ours.parameter_names))
    value, gradient = _agreement(ours, theirs, points)
    assert value < 1e-12 and gradient < 1e-10, (value, gradient)


def test_polarization_plane_turned_by_90_degrees_flips_the_polarized_part():
    """``rho(Phi) + rho(Phi + pi/2) = 2 rho(P = 0)``: independent of laddu and of the waves."""
    events = polarized.events(200, 21)
    model = polarized.build_model(ld)
    point = polarized.POINTS[1]

    def values(polarization, shift):
        scalars = dict(events["scalars"])
        scalars["beam_polarization"] = scalars["beam_polarization"] * polarization
        scalars["polarization_angle"] = scalars["polarization_angle"] + shift
        ds = ld.Dataset.from_arrays(p4s=events["p4s"], scalars=scalars)
        return np.asarray(model.evaluate(ds, parameters=[point[n] for n in model.parameter_names])).real

    polarized_part = values(1.0, 0.0) - values(0.0, 0.0)
    turned = values(1.0, np.pi / 2) - values(0.0, 0.0)
    assert np.max(np.abs(polarized_part)) > 1e-2 * np.max(values(0.0, 0.0))  # the beam matters
    np.testing.assert_allclose(turned, -polarized_part, rtol=0, atol=1e-12 * np.max(values(0.0, 0.0)))


def test_projection_of_the_polarized_model_is_the_model_of_the_kept_wave():
    """``Model.projection(["d_wave"])`` (a fit fraction's numerator) equals the model built
    with the D wave alone: the S wave and its interference with the D wave are gone."""
    events = ld.Dataset.from_arrays(**polarized.events(300, 31))
    point = polarized.POINTS[2]
    projected = polarized.build_model(ld).projection(["d_wave"])
    alone = polarized.build_model(ld, waves=polarized.WAVES[1:])
    assert projected.parameter_names == alone.parameter_names
    params = [point[n] for n in alone.parameter_names]
    got = np.asarray(projected.evaluate(events, parameters=params)).real
    want = np.asarray(alone.evaluate(events, parameters=params)).real
    assert np.max(np.abs(got - want) / np.abs(want)) < 1e-12


@needs_laddu
def test_projection_of_the_polarized_model_matches_laddu_per_event():
    events = polarized.events(300, 31)
    point = polarized.POINTS[2]
    values = []
    for lib in (ld, laddu):
        projected = polarized.build_model(lib).projection(["d_wave"])
        params = [point[n] for n in projected.parameter_names]
        values.append(np.asarray(projected.evaluate(lib.Dataset.from_arrays(**events), parameters=params)))
    assert agreement(*values) < 1e-12


def _reused(lib, depth: int):
    """A tagged wave reused ``2**depth`` times by ``depth`` nested products (a small graph)."""
    expr = (lib.parameter("a", initial=1.0) * lib.scalar("x")).tagged("w")
    for _ in range(depth):
        expr = expr * expr + 1.0
    return expr


@needs_laddu
def test_laddu_projection_unshares_the_graph_and_ours_keeps_it():
    """laddu 0.28.1's ``Expr.project`` copies every reuse of a subexpression: the projected
    graph doubles with each level (its JSON grows 4x per two levels while the unprojected
    one grows by a constant), so ``Model(intensity.project(["s_wave"]))`` of the polarized
    tutorial model exhausts memory (over 8 GB; its ``Model.projection`` does not). Ours
    keeps the graph shared (the README table)."""
    plain = [len(_reused(laddu, depth).to_json()) for depth in (6, 8)]
    projected = [len(_reused(laddu, depth).project(["w"]).to_json()) for depth in (6, 8)]
    assert plain[1] - plain[0] < 0.3 * plain[0] and projected[1] > 3.5 * projected[0]
    deep = _reused(ld, 40)  # 2**40 uses of the wave
    assert len(walk(deep.project(["w"]))) <= len(walk(deep)) < 200
