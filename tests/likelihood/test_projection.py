"""``Likelihood.project``: accepted-MC weights ``w I`` scaled to the data's total weight.

References: the intensity computed with NumPy from the generator's own formula
(``ksks.truth_intensity`` of ``ksks.angles``), and laddu's ``Model.evaluate`` of the same
model. Weights are not all 1 (on data and on accepted MC), and the likelihood has two
terms whose parameters differ, so that a projection that ignored the term's parameter
mapping, or scaled by an event count instead of the data weight, fails.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from laddu_reference import HAVE_LADDU, laddu, needs_laddu  # noqa: F401

import laddu_dask as ld
from laddu_dask import ksks

#: Per-event intensities near the poles are ill-conditioned in the four-vectors
#: (s = E^2 - |p|^2 of 8 GeV kaons); the libraries agree to 3e-12 relative (measured).
RTOL = 2e-11

POINT = {"s_mass": 1.49, "s_width": 0.13, "d_mass": 1.52, "d_width": 0.08, "d0_re": 0.6,
         "d0_im": 0.2, "d1_re": -0.5, "d1_im": 0.4, "d2_re": 0.3, "d2_im": -0.2}


@pytest.fixture(scope="module")
def weighted():
    data, mc = ksks.generate(n_data=400, n_mc=1500, seed=31)
    rng = np.random.default_rng(5)
    w_data = rng.uniform(0.2, 1.7, 400)
    w_mc = rng.uniform(0.5, 3.0, 1500)
    names = ("beam", "proton", "kshort1", "kshort2")
    ds_data = ld.Dataset.from_arrays(p4s={k: data[k] for k in names}, weights=w_data,
                                     chunk_size=150)
    ds_mc = ld.Dataset.from_arrays(p4s={k: mc[k] for k in names}, weights=w_mc, chunk_size=400)
    return data, mc, w_data, w_mc, ds_data, ds_mc


def _numpy_projection(mc, w_mc, w_data, params):
    s, costheta, phi = ksks.angles(mc)
    wi = w_mc * ksks.truth_intensity(s, costheta, phi, params)
    return wi * (math.fsum(w_data) / math.fsum(wi))


def test_projection_equals_numpy_on_weighted_samples(weighted):
    _, mc, w_data, w_mc, ds_data, ds_mc = weighted
    lik = ld.Likelihood([ld.NLL(ksks.model("bw"), data=ds_data, accepted_mc=ds_mc)])
    weights = lik.project(POINT)
    expected = _numpy_projection(mc, w_mc, w_data, POINT)
    assert weights.shape == (len(w_mc),)
    np.testing.assert_allclose(weights, expected, rtol=RTOL)
    # the projection carries the data's total weight, not an event count
    assert math.fsum(weights) == pytest.approx(math.fsum(w_data), rel=1e-13)
    assert abs(math.fsum(weights) - len(w_data)) > 1.0


def test_projection_of_a_term_uses_that_terms_parameters(weighted):
    """A first term with another parameter, so the KsKs term's parameters are not first."""
    _, mc, w_data, w_mc, ds_data, ds_mc = weighted
    bkg = ld.parameter("bkg", initial=2.0, bounds=(0.1, 10.0))
    flat = ld.NLL(ld.Model(bkg * ld.Vec4.event("kshort1").e()), data=ds_data, accepted_mc=ds_mc,
                  name="flat")
    full = ld.NLL(ksks.model("bw"), data=ds_data, accepted_mc=ds_mc, name="full")
    lik = ld.Likelihood([flat, full])
    assert lik.parameter_names == ["bkg", *ksks.TRUTH]
    with pytest.raises(ValueError, match="name the term to project: one of flat, full"):
        lik.project(POINT)
    with pytest.raises(ValueError, match="no term named 'nope'"):
        lik.project(POINT, term="nope")
    point = dict(POINT, bkg=3.0)
    np.testing.assert_allclose(lik.project(point, term="full"),
                               _numpy_projection(mc, w_mc, w_data, POINT), rtol=RTOL)
    e_k1 = w_mc * mc["kshort1"][:, 0]
    np.testing.assert_allclose(lik.project(point, term="flat"),
                               e_k1 * (math.fsum(w_data) / math.fsum(e_k1)), rtol=1e-14)
    # a vector in the likelihood's order is mapped to each term's own order
    vector = [point[n] for n in lik.parameter_names]
    np.testing.assert_array_equal(lik.project(vector, term="full"),
                                  lik.project(point, term="full"))


@needs_laddu
def test_projection_intensities_equal_laddus(weighted):
    from laddu_dask_bench.laddu_ksks import ksks_intensity_expr

    _, mc, w_data, w_mc, ds_data, ds_mc = weighted
    lik = ld.Likelihood([ld.NLL(ksks.model("bw"), data=ds_data, accepted_mc=ds_mc)])
    model = laddu.Model(ksks_intensity_expr("bw"))
    names = ("beam", "proton", "kshort1", "kshort2")
    dataset = laddu.Dataset.from_arrays(p4s={k: np.ascontiguousarray(mc[k]) for k in names},
                                        scalars={}, weights=w_mc)
    theirs = np.real(np.asarray(model.evaluate(dataset, parameters=POINT)))
    wi = w_mc * theirs
    expected = wi * (math.fsum(w_data) / math.fsum(wi))
    np.testing.assert_allclose(lik.project(POINT), expected, rtol=RTOL)
