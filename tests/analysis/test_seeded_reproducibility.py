"""Reproducibility of seeded many-fit runs (issue 30, item 1): the same seed gives the same
replicas and starts as before, release after release.

The other tests derive what they expect from ``replica_seeds`` or ``sample_parameters``
themselves, so a change in how seeds are derived passes them all.  Here the references are
independent of that code:

* golden values, written down once from the code of commit 984ef0a (replica seeds, the
  first replica's Poisson weights, the sampled starts of ``fit_restarts`` and ``fit_bins``);
  a deliberate change of the seeding must update them and say so in its release notes;
* a closed form: the model ``I = a * sa + sb`` (``sa``, ``sb`` the indicators of two
  classes of events, the accepted MC split evenly between them) has the maximum-likelihood
  estimate ``a = W_A / W_B``, the ratio of the replica's data weights in the two classes,
  so each bootstrap fit reveals its replica's Poisson counts.

laddu 0.28.1 draws bootstrap weights and sampled starts from its own generator and does not
document how ``bootstrap_fit`` derives the replicas' seeds; laddu-dask promises laddu's
distributions, not laddu's numbers (README, table of differences), so laddu is no reference
for these values.
"""

from __future__ import annotations

import numpy as np
import pytest

import laddu_dask as ld
from laddu_dask.analysis import replica_seeds

# golden values, written down once from the code of commit 984ef0a (see the module docstring)
SEEDS_11 = [1185850812994184743, 4605025475050782003, 5547843131917349438]
FIRST_REPLICA_WEIGHTS_11 = [0.0, 2.0, 0.0, 0.0, 1.0, 0.0, 2.0, 2.0, 0.0, 0.0, 1.0, 2.0]
REPLICA_CLASS_WEIGHTS_11 = [(3.0, 7.0), (5.0, 7.0), (6.0, 8.0)]  # (W_A, W_B) of replicas 0, 1, 2
RESTART_STARTS_4 = [[1.9145841583585514], [1.2669913292215425], [1.9643655585615563]]
BIN_STARTS_5 = [[[0.5372444798421319], [0.8299004458651218]],
                [[0.5363871084371594], [1.0675210104086705]]]


def _classes():
    """Twelve data events, the first six of class A, alternating between the two mass bins;
    eight accepted-MC events, four of each class, two of each in each bin."""
    sa = np.array([1.0] * 6 + [0.0] * 6)
    data = ld.Dataset.from_arrays(scalars={"sa": sa, "sb": 1.0 - sa, "m": np.array([1.1, 1.6] * 6)})
    mc = ld.Dataset.from_arrays(scalars={"sa": np.array([1.0, 0.0] * 4), "sb": np.array([0.0, 1.0] * 4),
                                         "m": np.array([1.1, 1.1, 1.6, 1.6] * 2)})
    model = ld.Model(ld.parameter("a", initial=(0.5, 2.0), bounds=(1e-3, 1e3)) * ld.scalar("sa")
                     + ld.scalar("sb"))
    return model, data, mc


def test_replica_seeds_and_the_first_replicas_weights_are_pinned():
    assert replica_seeds(11, 3) == SEEDS_11
    assert replica_seeds(11, 2) == SEEDS_11[:2]  # a longer run extends a shorter one
    _, data, _ = _classes()
    weights = data.bootstrap(seed=SEEDS_11[0]).weights()
    assert weights.tolist() == FIRST_REPLICA_WEIGHTS_11
    assert (weights[:6].sum(), weights[6:].sum()) == REPLICA_CLASS_WEIGHTS_11[0]


def test_bootstrap_fit_with_a_seed_refits_the_same_replicas_as_before():
    model, data, mc = _classes()
    lik = ld.Likelihood([ld.NLL(model, data=data, accepted_mc=mc)])
    ensemble = lik.bootstrap_fit(3, seed=11, method="migrad", tolerance=1e-6).fits
    assert [f.valid for f in ensemble] == [True, True, True]
    # closed form: a = W_A / W_B of each replica (the MC's classes are equal)
    want = [w_a / w_b for w_a, w_b in REPLICA_CLASS_WEIGHTS_11]
    assert [f.named_parameters["a"] for f in ensemble] == pytest.approx(want, rel=1e-4)


def test_fit_restarts_with_a_seed_starts_where_it_did():
    model, data, mc = _classes()
    lik = ld.Likelihood([ld.NLL(model, data=data, accepted_mc=mc)])
    fits = lik.fit_restarts(3, seed=4)
    assert fits.starts.tolist() == RESTART_STARTS_4
    first = lik.fit_restarts(3, {"a": 1.0}, seed=4)  # an initial start comes first, then the same draws
    assert first.starts.tolist() == [[1.0], *RESTART_STARTS_4[:2]]


def test_fit_bins_with_a_seed_starts_each_bin_where_it_did():
    model, data, mc = _classes()
    fits = ld.fit_bins(model, data=data, accepted_mc=mc, by=ld.scalar("m"), bins=ld.Bin([1.0, 1.5, 2.0]),
                       restarts=2, seed=5, method="migrad", tolerance=1e-6)
    assert [f.ensemble.starts.tolist() for f in fits] == BIN_STARTS_5
    # each bin holds three A and three B events: a = 1 in both (closed form)
    assert [f.best.named_parameters["a"] for f in fits] == pytest.approx([1.0, 1.0], rel=1e-4)
