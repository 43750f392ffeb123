"""Closure (input-output) studies (issue 13, item 4): ``closure_study`` and ``ClosureResult``.

References: the pulls of the ten-parameter KsKs toy (mean within 3 sigma of 0, width
within 3 sigma of 1, fixed seeds); closed forms of two one-parameter likelihoods (a
two-bin asymmetry, whose MLE is ``(n+ - n-) / N`` with variance ``4 n+ n- / N^3``, and an
extended yield, ``a = N / W`` with error ``sqrt(N) / W``); bitwise equality of the replicas
and fits for 1 and 2 workers (and a LocalCluster); typed errors.

The accepted MC of the KsKs study is 200 times a replica's size: every replica shares it,
so its own fluctuation would shift all replicas together (with 20 times, the d_mass pull
mean sat 4 sigma off 0 for this seed).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import laddu_dask as ld
from laddu_dask import ksks
from laddu_dask.errors import ClosureError, DataError, ParameterError
from laddu_dask.results.pseudo_data import PoolSource, event_count, replica_stream

N_EVENTS, N_REPLICAS = 1000, 30


@pytest.fixture(scope="module")
def ksks_samples():
    """A KsKs accepted-MC pool to draw the pseudo-data from, and an independent
    normalization sample (both from the toy's flat phase space times its acceptance)."""
    _, pool = ksks.generate(n_data=0, n_mc=1_300_000, seed=21)
    _, mc = ksks.generate(n_data=0, n_mc=200_000, seed=22)
    return ld.Dataset.from_arrays(p4s=pool), ld.Dataset.from_arrays(p4s=mc)


def test_ksks_closure_pulls_are_unit_gaussians(ksks_samples):
    pool, mc = ksks_samples
    study = ld.closure_study(ksks.model(), ksks.TRUTH, source=pool, accepted_mc=mc, n_events=N_EVENTS,
                             n_replicas=N_REPLICAS, seed=5, execution=ld.Execution(num_workers=2))
    assert study.parameter_names == list(ksks.PARAMETER_NAMES)
    assert study.failed == [] and study.pulls.shape == (N_REPLICAS, 10)
    assert (study.events == N_EVENTS).all()
    summary = study.summary()
    for name, s in summary.items():
        assert abs(s["pull_mean"]) < 3.0 * s["pull_mean_error"], (name, s)
        assert abs(s["pull_width"] - 1.0) < 3.0 * s["pull_width_error"], (name, s)
        assert s["pull_width_error"] == pytest.approx(s["pull_width"] / math.sqrt(2 * (N_REPLICAS - 1)))
    assert all(study.agrees(3.0).values())
    pulls = (study.values - [ksks.TRUTH[n] for n in study.parameter_names]) / study.errors
    assert np.array_equal(pulls, study.pulls)
    assert "d2_im" in study.table() and "30 valid, 0 failed" in repr(study)


def test_the_same_replicas_for_one_and_two_workers(ksks_samples):
    pool, _ = ksks_samples
    _, small_mc = ksks.generate(n_data=0, n_mc=20_000, seed=23)
    mc = ld.Dataset.from_arrays(p4s=small_mc)
    runs = [ld.closure_study(ksks.model(), ksks.TRUTH, source=pool, accepted_mc=mc, n_events=500,
                             n_replicas=3, seed=9, execution=ld.Execution(num_workers=w)) for w in (1, 2)]
    one, two = runs
    assert np.array_equal(one.values, two.values) and np.array_equal(one.errors, two.errors)
    assert [f.fval for f in one.fits] == [f.fval for f in two.fits]
    # each task's fit is the fit of that replica alone, bitwise
    source = PoolSource(pool, ksks.model(), ksks.TRUTH, n_replicas=3, seed=9)
    rng = replica_stream(9, (1,))
    replica = source.draw(1, event_count(rng, 500, False), rng)
    alone = ld.Likelihood([ld.NLL(ksks.model(), data=replica, accepted_mc=mc)]).fit(initial=ksks.TRUTH,
                                                                                    method="migrad")
    assert alone.fval == one.fits[1].fval and np.array_equal(alone.values, one.fits[1].values)


def _asymmetry(n_pool: int = 40_000):
    """I = 1 + a s with s = +-1: the normalization does not depend on a."""
    s = ld.scalar("s")
    model = ld.Model(1.0 + ld.parameter("a", initial=0.0, bounds=(-0.99, 0.99)) * s)
    signs = np.tile([1.0, -1.0], n_pool // 2)
    pool, mc = (ld.Dataset.from_arrays(scalars={"s": signs[:n]}) for n in (n_pool, 2000))
    return model, pool, mc


def _unit_gaussian(s: dict) -> bool:
    """Pull mean within 3 sigma of 0 and width within 3 sigma of 1."""
    return (abs(s["pull_mean"]) < 3 * s["pull_mean_error"]
            and abs(s["pull_width"] - 1) < 3 * s["pull_width_error"])


def test_closed_form_asymmetry():
    model, pool, mc = _asymmetry()
    seen = []
    study = ld.closure_study(model, {"a": 0.3}, source=pool, accepted_mc=mc, n_events=400, n_replicas=20,
                             seed=3, tolerance=1e-4, progress=lambda i, n, result: seen.append((i, n)))
    assert sorted(seen) == [(i, 20) for i in range(20)]
    source = PoolSource(pool, model, {"a": 0.3}, n_replicas=20, seed=3)
    for k in range(20):
        rng = replica_stream(3, (k,))
        data = source.draw(k, event_count(rng, 400, False), rng).column("s")
        n_plus, n_minus, n = (data > 0).sum(), (data < 0).sum(), len(data)
        sigma = math.sqrt(4.0 * n_plus * n_minus / n**3)
        assert study.values[k, 0] == pytest.approx((n_plus - n_minus) / n, abs=1e-3 * sigma)
        assert study.errors[k, 0] == pytest.approx(sigma, rel=1e-3)
    assert _unit_gaussian(study.summary()["a"])


def test_closed_form_extended_yield_with_poisson_counts():
    x = ld.scalar("x")
    model = ld.Model(ld.parameter("a", initial=1.0, bounds=(0.0, None)) * x)
    rng = np.random.default_rng(2)
    pool = ld.Dataset.from_arrays(scalars={"x": rng.uniform(0.5, 1.5, 30_000)})
    mc_x, mc_w = rng.uniform(0.5, 1.5, 3000), np.full(3000, 0.1)
    mc = ld.Dataset.from_arrays(scalars={"x": mc_x}, weights=mc_w)
    big_w = math.fsum((mc_w * mc_x).tolist())            # sum_accmc w x: the yield is a W
    study = ld.closure_study(model, {"a": 2.0}, source=pool, accepted_mc=mc, n_replicas=12, seed=4,
                             extended=True, tolerance=1e-4)
    assert study.settings["poisson"] is True
    assert study.settings["n_events"] == pytest.approx(2.0 * big_w, rel=1e-12)
    assert len(set(study.events.tolist())) > 1            # Poisson-fluctuated counts
    for k, n in enumerate(study.events):
        assert n == event_count(replica_stream(4, (k,)), 2.0 * big_w, True)
        assert study.values[k, 0] == pytest.approx(n / big_w, abs=1e-3 * math.sqrt(n) / big_w)
        assert study.errors[k, 0] == pytest.approx(math.sqrt(n) / big_w, rel=1e-3)


def test_generator_source():
    beam = ld.Edge("beam", particle=ld.particles.PHOTON,
                   initial_momentum=ld.InitialMomentum.uniform_energy(low=8.0, high=9.0, direction=[0, 0, 1]))
    target = ld.Edge("target", particle=ld.particles.PROTON,
                     initial_momentum=ld.InitialMomentum.momentum([0, 0, 0]))
    x = ld.Edge("X", mass_proposal=ld.MassProposal(1.0, high=2.0), output=False)
    channel = ld.Channel("gamma p -> K_S K_S p", edges=[
        beam, target, x, ld.Edge("recoil", particle=ld.particles.PROTON),
        ld.Edge("ks1", particle=ld.particles.K_SHORT), ld.Edge("ks2", particle=ld.particles.K_SHORT)],
        vertices=[ld.Vertex("production", incoming=["beam", "target"], outgoing=["X", "recoil"],
                            generation=ld.VertexProposal.t_exchange(incoming="beam", outgoing="X", slope=4.0,
                                                                    uniform_fraction=0.5)),
                  ld.Vertex("decay", incoming=["X"], outgoing=["ks1", "ks2"])])
    mass = (ld.Vec4.event("ks1") + ld.Vec4.event("ks2")).m().real()
    model = ld.Model(1.0 + ld.parameter("b", initial=0.0, bounds=(-1.9, 1.9)) * (mass - 1.5))
    mc, _ = ld.Generator(channel).unweighted(20_000, seed=1)
    study = ld.closure_study(model, {"b": 1.2}, source=channel, accepted_mc=mc, n_events=600, n_replicas=8,
                             seed=2, generator_options={"pilot_proposals": 2000})
    assert study.settings["source"] == "generator" and study.failed == []
    assert _unit_gaussian(study.summary()["b"])
    again = ld.closure_study(model, {"b": 1.2}, source=ld.Generator(channel), accepted_mc=mc, n_events=600,
                             n_replicas=8, seed=2, generator_options={"pilot_proposals": 2000})
    assert np.array_equal(again.values, study.values)


def test_failed_fits_are_counted_and_reported(tmp_path):
    model, pool, mc = _asymmetry()
    study = ld.closure_study(model, {"a": 0.3}, source=pool, accepted_mc=mc, n_events=400, n_replicas=3,
                             seed=3, initial={"a": -0.5}, max_calls=3)
    assert [i for i, _ in study.failed] == [0, 1, 2] and study.pulls.shape == (0, 1)
    assert all("call limit" in why for _, why in study.failed)
    with pytest.raises(ClosureError, match="only 0 of 3 replicas were fitted validly"):
        study.summary()
    assert "0 valid, 3 failed" in repr(study)


def test_pull_plot(tmp_path):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    model, pool, mc = _asymmetry()
    study = ld.closure_study(model, {"a": 0.3}, source=pool, accepted_mc=mc, n_events=300, n_replicas=6,
                             seed=8)
    fig = study.plot()
    visible = [ax for ax in fig.axes if ax.get_visible()]
    assert len(visible) == 1 and visible[0].get_title() == "a" and "width" in visible[0].texts[0].get_text()
    fig.savefig(tmp_path / "pulls.png")
    with pytest.raises(ParameterError, match="not parameters of the closure study: 'b'"):
        study.plot(["b"])


def test_json_round_trip(tmp_path):
    model, pool, mc = _asymmetry()
    study = ld.closure_study(model, [0.3], source=pool, accepted_mc=mc, n_events=300, n_replicas=4, seed=8)
    text = study.to_json(tmp_path / "closure.json")
    back = ld.ClosureResult.load(tmp_path / "closure.json")
    assert back.summary() == study.summary() and '"kind": "laddu_dask.ClosureResult"' in text
    assert np.array_equal(back.pulls, study.pulls) and back.settings == study.settings


def test_typed_errors():
    model, pool, mc = _asymmetry(4000)
    good = {"source": pool, "accepted_mc": mc, "n_events": 100, "n_replicas": 2}
    cases = [
        ({"truth": {"a": 0.3, "b": 1.0}}, ParameterError, "unknown parameter 'b'"),
        ({"truth": {}}, ParameterError, "no value given for parameter"),
        ({"truth": {"a": 1.5}}, ParameterError, "truth of 'a' .* outside its bounds"),
        ({"n_replicas": 1}, ParameterError, "n_replicas must be an integer >= 2"),
        ({"n_replicas": True}, ParameterError, "n_replicas"),
        ({"seed": -1}, ParameterError, "seed must be"),
        ({"n_events": None}, ParameterError, "n_events is needed"),
        ({"n_events": 0}, ParameterError, "n_events must be positive"),
        ({"n_events": 10.5}, ParameterError, "whole number"),
        ({"source": "events.parquet"}, ParameterError, "source must be a Dataset, a Channel or a Generator"),
        ({"accepted_mc": None}, ParameterError, "accepted_mc must be a Dataset"),
        ({"n_events": 1900}, DataError, "replica 0 kept .* fewer than the 1900"),
        ({"generator_options": {"pilot_proposals": 10}}, ParameterError, "generator_options"),
        ({"initial": {"a": 2.0}}, ParameterError, "initial value of 'a' .* outside its bounds"),
        ({"method": "simplex"}, ParameterError, "method must be one of 'migrad', 'lbfgsb'"),
        ({"max_call": 10}, ParameterError, "unknown keyword.*'max_call'.*strategy, tolerance, max_calls"),
    ]
    for change, error, message in cases:
        kwargs = {"truth": {"a": 0.3}, **good, **change}
        truth = kwargs.pop("truth")
        with pytest.raises(error, match=message):
            ld.closure_study(model, truth, **kwargs)
    with pytest.raises(ParameterError, match="model must be a laddu_dask Model"):
        ld.closure_study("model", {"a": 0.3}, **good)
    with pytest.warns(UserWarning, match="drawn from accepted_mc itself"):
        ld.closure_study(model, {"a": 0.3}, **{**good, "source": mc})
    negative = ld.Dataset.from_arrays(scalars={"s": np.array([1.0, -1.0])}, weights=[1.0, -0.5])
    with pytest.raises(DataError, match="event 1 of the closure source has a negative weight"):
        ld.closure_study(model, {"a": 0.3}, **{**good, "source": negative})


@pytest.mark.slow
def test_replicas_on_a_cluster_are_the_local_ones():
    """On a 2-process LocalCluster the replicas' fits run as tasks on the workers
    (``laddu-dask-fit-closure-*``: the 6 replicas dealt to laddu-dask.analysis.tasks-per-thread,
    2, tasks per worker thread), and every fit is the local one, bit for bit."""
    distributed = pytest.importorskip("distributed")
    from cluster_helpers import local_cluster

    model, pool, mc = _asymmetry()
    study = {"source": pool, "accepted_mc": mc, "n_events": 400, "n_replicas": 6, "seed": 3}
    local = ld.closure_study(model, {"a": 0.3}, **study)
    for client in local_cluster():
        assert isinstance(client, distributed.Client)
        remote = ld.closure_study(model, {"a": 0.3}, execution=ld.Execution(client=client), **study)
        ran = client.run_on_scheduler(lambda dask_scheduler: [
            (str(t[0]), t[2]) for t in dask_scheduler.transition_log
            if str(t[0]).startswith("laddu-dask-fit-closure")])
    assert np.array_equal(remote.values, local.values) and np.array_equal(remote.errors, local.errors)
    assert [f.fval for f in remote.fits] == [f.fval for f in local.fits]
    assert len({k for k, state in ran if state == "memory"}) == 2 * 2  # 2 workers of 1 thread
