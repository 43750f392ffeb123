"""Many fits (issue 12, items 4 and 6): restarts, bootstrap refits, binned fits, results in JSON.

References: the same fits run one by one in a loop (the ensembles must hold exactly their
minima), laddu 0.28.1's tutorial procedure for a mass-independent fit (``bin_by`` plus one
NLL per bin: the same -2 ln L in every bin at the same parameters), and JSON round trips.
"""

from __future__ import annotations

import math

import dask
import numpy as np
import pytest
from laddu_reference import laddu, needs_laddu

import laddu_dask as ld
from laddu_dask.analysis import replica_seeds


def _waves(lib):
    """An S + P + D angular model (complex couplings, S fixed at 1: the NLL does not depend on
    the overall scale, which a free S would leave undetermined), written once for both
    libraries."""
    costheta, phi = lib.scalar("costheta"), lib.scalar("phi")
    amp = lib.parameter("s", fixed=1.0) * lib.spherical_harmonic(
        0, 0, costheta=costheta, phi=phi)
    for l in (1, 2):
        c = lib.complex(lib.parameter(f"w{l} re", initial=(-1.0, 1.0), bounds=(-5.0, 5.0)),
                        lib.parameter(f"w{l} im", initial=(-1.0, 1.0), bounds=(-5.0, 5.0)))
        amp = amp + c * lib.spherical_harmonic(l, 1, costheta=costheta, phi=phi)
    return lib.Model(amp.norm_sqr())


def _events(n, seed, accept=False):
    """Events with a mass ``m`` and angles; the data are drawn (accept-reject) from a
    mass-dependent mixture of waves, the MC is flat."""
    rng = np.random.default_rng(seed)
    m, c, p = rng.uniform(1.0, 2.0, 4 * n), rng.uniform(-1, 1, 4 * n), rng.uniform(-math.pi, math.pi, 4 * n)
    if accept:
        density = 1.0 + 0.6 * (m - 1.0) * c + 0.4 * (1.0 - c * c) * np.cos(p) ** 2
        keep = rng.uniform(0, 2.2, density.size) < density
        m, c, p = m[keep], c[keep], p[keep]
    return {"m": m[:n], "costheta": c[:n], "phi": p[:n]}


@pytest.fixture(scope="module")
def samples():
    return _events(4000, 1, accept=True), _events(20000, 2)


def _dataset(columns):
    return ld.Dataset.from_arrays(scalars=columns)


def _likelihood(samples):
    data, mc = samples
    return ld.Likelihood([ld.NLL(_waves(ld), data=_dataset(data), accepted_mc=_dataset(mc))])


@pytest.mark.parametrize("method", [None, "migrad"])
def test_restarts_are_the_fits_run_one_by_one(samples, method):
    lik = _likelihood(samples)
    first = {"w1 re": 0.2, "w1 im": 0.1, "w2 re": 0.3, "w2 im": -0.2}
    fits = lik.fit_restarts(4, first, seed=7, method=method)
    starts = [lik.resolve(first).tolist(), *lik.sample_parameters(seed=7, n=3)]
    assert np.array_equal(fits.starts, starts)
    for got, start in zip(fits, starts, strict=True):
        want = lik.fit(initial=start, method=method)
        assert got.fval == want.fval and np.array_equal(got.values, want.values) and got.valid == want.valid
    # (laddu's L-BFGS-B, like laddu's own, runs from these starts into corners of the bounds
    # where the Hessian is not positive-definite: converged, not valid)
    assert fits.best.fval == min(f.fval for f in (fits.valid or fits))
    assert fits.failed == [(i, f.message) for i, f in enumerate(fits) if not f.valid]


def test_a_failing_restart_is_recorded_and_the_others_complete(samples):
    lik = _likelihood(samples)
    # the first start is outside its bounds
    fits = lik.fit_restarts(3, {"w1 re": 9.0}, seed=1, method="migrad")
    index, message = fits.failed[0]
    assert index == 0 and "ParameterError" in message and "outside its bounds" in fits[0].message
    assert not fits[0].valid and math.isnan(fits[0].fval)
    assert all(f.valid for f in fits[1:])
    with pytest.raises(ValueError, match="restarts must be a positive integer, got 0"):
        lik.fit_restarts(0)


def test_bootstrap_refits_are_fits_of_reweighted_data_sharing_the_mc(samples):
    data, mc = samples
    lik = _likelihood(samples)
    central = lik.fit()
    ensemble = lik.bootstrap_fit(3, central.values, seed=11)
    for got, s in zip(ensemble.fits, replica_seeds(11, 3), strict=True):
        replica = ld.Likelihood([ld.NLL(_waves(ld), data=_dataset(data).bootstrap(seed=s),
                                        accepted_mc=_dataset(mc))])
        want = replica.fit(initial=central.values)
        assert got.fval == want.fval and np.array_equal(got.values, want.values)
    assert ensemble.draws.shape == (3, 4) and all(v > 0 for v in ensemble.fits.spread().values())
    # the replicas prepared only their data: the accepted MC's preparation is the original's
    term, twin = lik.terms[0], lik.terms[0].with_data(_dataset(data).bootstrap(seed=1))
    ex = lik.execution
    mine, original = twin.prepare(ex), term.prepare(ex)
    assert mine.stats is original.stats and mine.model is original.model and mine.data is not original.data


def test_binned_fits_are_the_fits_of_each_bin_and_an_empty_bin_is_reported(samples):
    data, mc = samples
    model = _waves(ld)
    bins = ld.Bin([1.0, 1.5, 2.0, 2.5])  # the last bin has no events
    # MIGRAD: on this toy laddu's L-BFGS-B (the default) runs two restarts of bin 1 into the
    # box's corners (bounded waves: no valid minimum), MIGRAD finds the one inside
    fits = ld.fit_bins(model, data=_dataset(data), accepted_mc=_dataset(mc), by=ld.scalar("m"), bins=bins,
                       restarts=2, seed=5, method="migrad")
    assert [(f.index, f.low, f.high) for f in fits] == [(0, 1.0, 1.5), (1, 1.5, 2.0), (2, 2.0, 2.5)]
    for f, bin_seed in zip(fits[:2], replica_seeds(5, 3)[:2], strict=True):
        keep = (data["m"] >= f.low) & (data["m"] < f.high if f.index < 2 else data["m"] <= f.high)
        keep_mc = (mc["m"] >= f.low) & (mc["m"] < f.high)
        by_hand = ld.Likelihood([ld.NLL(model, data=_dataset({k: v[keep] for k, v in data.items()}),
                                        accepted_mc=_dataset({k: v[keep_mc] for k, v in mc.items()}))])
        for got, start in zip(f.ensemble, by_hand.sample_parameters(seed=bin_seed, n=2), strict=True):
            want = by_hand.fit(initial=start, method="migrad")
            assert got.fval == want.fval and np.array_equal(got.values, want.values)
        assert f.best is not None and f.best.valid
    assert fits[2].likelihood is None and fits[2].best is None
    assert "DataError" in fits[2].ensemble.failed[0][1] and "no events" in fits[2].ensemble.failed[0][1]


@needs_laddu
def test_a_mass_independent_fit_has_laddus_nll_in_every_bin():
    """laddu's tutorial procedure (bin_by, one NLL per bin) on the same events: the same
    -2 ln L and gradient in each of 20 bins at the same parameters."""
    data, mc = _events(6000, 3, accept=True), _events(24000, 4)
    edges = np.linspace(1.0, 2.0, 21)
    ours = ld.binned_likelihoods(_waves(ld), data=_dataset(data), accepted_mc=_dataset(mc),
                                 by=ld.scalar("m"), bins=ld.Bin(edges))
    def theirs_binned(columns):  # laddu's from_arrays needs a four-vector: a fixed beam the model ignores
        beam = np.tile([8.5, 0.0, 0.0, 8.5], (len(columns["m"]), 1))
        ds = laddu.Dataset.from_arrays(p4s={"beam": beam}, scalars=columns)
        return ds.bin_by(laddu.scalar("m"), bins=laddu.Bin(edges))

    ref_data, ref_mc = theirs_binned(data), theirs_binned(mc)
    x = [0.3, -0.2, 0.25, 0.4]
    assert len(ours) == 20
    for (b, lik), d, m in zip(ours, ref_data, ref_mc, strict=True):
        theirs = laddu.Likelihood([laddu.NLL(_waves(laddu), data=d.dataset, accepted_mc=m.dataset)])
        assert list(lik.parameter_names) == list(theirs.parameter_names)
        (v, g), (w, h) = lik.value_and_gradient(x), theirs.value_and_gradient(x)
        assert abs(v - w) <= 1e-12 * abs(w), b.index
        assert np.max(np.abs(np.asarray(g) - np.asarray(h))) <= 1e-10 * np.max(np.abs(h)), b.index


def test_results_and_ensembles_survive_json(samples, tmp_path):
    lik = _likelihood(samples)
    fits = lik.fit_restarts(2, seed=3, method="migrad")
    fits[0].save(tmp_path / "fit.json")
    back = ld.FitResult.load(tmp_path / "fit.json")
    assert (back.values.tolist(), back.errors, back.fval, back.valid, back.parameter_names) == (
        fits[0].values.tolist(), fits[0].errors, fits[0].fval, fits[0].valid, fits[0].parameter_names)
    assert np.array_equal(back.covariance, fits[0].covariance) and back.bounds == fits[0].bounds
    fits.save(tmp_path / "ensemble.json")
    again = ld.FitEnsemble.load(tmp_path / "ensemble.json")
    assert [r.fval for r in again] == [r.fval for r in fits] and np.array_equal(again.starts, fits.starts)
    assert np.array_equal(again.best.values, fits.best.values) and again.label == "restarts"
    with pytest.raises(ValueError, match=r"ensemble.json holds 'laddu_dask.FitEnsemble', not a .*FitResult"):
        ld.FitResult.load(tmp_path / "ensemble.json")
    (tmp_path / "broken.json").write_text("{")
    with pytest.raises(ValueError, match="broken.json is not JSON"):
        ld.FitEnsemble.load(tmp_path / "broken.json")


@pytest.mark.slow
def test_on_a_cluster_the_fits_run_as_tasks_and_equal_the_local_ones(samples):
    """Binned fits and restarts on a 2-process LocalCluster: each fit is one task on a worker
    (no evaluation crosses the network), and every minimum is the local one, bit for bit."""
    distributed = pytest.importorskip("distributed")
    from cluster_helpers import local_cluster

    data, mc = samples
    bins = ld.Bin([1.0, 1.5, 2.0])
    def binned(execution=None):
        return ld.fit_bins(_waves(ld), data=_dataset(data), accepted_mc=_dataset(mc), by=ld.scalar("m"),
                           bins=bins, restarts=2, seed=5, execution=execution)

    local_bins = binned()
    three = ld.Bin([1.0, 1.3, 1.6, 2.0])
    local_three = ld.fit_bins(_waves(ld), data=_dataset(data), accepted_mc=_dataset(mc), by=ld.scalar("m"),
                              bins=three, restarts=2, seed=5)
    local_restarts = _likelihood(samples).fit_restarts(3, seed=8)
    one_by_one = _likelihood(samples).fit_restarts(3, seed=8, batch=False)
    central = local_restarts.best.values
    local_boot = _likelihood(samples).bootstrap_fit(5, central, seed=4).fits
    for client in local_cluster():
        assert isinstance(client, distributed.Client)
        ex = ld.Execution(client=client)
        remote_bins = binned(ex)
        lik = ld.Likelihood([ld.NLL(_waves(ld), data=_dataset(data), accepted_mc=_dataset(mc))], execution=ex)
        remote_restarts = lik.fit_restarts(3, seed=8)
        with dask.config.set({"laddu-dask.analysis.task-bytes": 0}):  # too big for a task: lockstep
            spanning = lik.fit_restarts(3, seed=8)
        remote_boot = lik.bootstrap_fit(5, central, seed=4).fits  # one task per worker thread
        with dask.config.set({"laddu-dask.analysis.tasks-per-thread": 1}):  # 3 bins in 2 tasks
            remote_three = ld.fit_bins(_waves(ld), data=_dataset(data), accepted_mc=_dataset(mc),
                                       by=ld.scalar("m"), bins=three, restarts=2, seed=5, execution=ex)
        ran = client.run_on_scheduler(lambda dask_scheduler: [
            (str(t[0]), t[2]) for t in dask_scheduler.transition_log
            if str(t[0]).startswith("laddu-dask-fit")])
    for got, want in zip(remote_bins, local_bins, strict=True):
        assert [r.fval for r in got.ensemble] == [r.fval for r in want.ensemble]
        assert [r.values.tolist() for r in got.ensemble] == [r.values.tolist() for r in want.ensemble]
    assert [r.fval for r in remote_restarts] == [r.fval for r in local_restarts]
    assert [r.fval for r in spanning] == [r.fval for r in local_restarts]
    assert [r.values.tolist() for r in spanning] == [r.values.tolist() for r in local_restarts]
    assert [r.values.tolist() for r in remote_restarts] == [r.values.tolist() for r in local_restarts]
    # lockstep, one by one, local and cluster: the same minima, bit for bit
    assert [r.values.tolist() for r in one_by_one] == [r.values.tolist() for r in local_restarts]
    assert [r.fval for r in one_by_one] == [r.fval for r in local_restarts]
    assert [r.fval for r in remote_boot] == [r.fval for r in local_boot]
    assert [r.values.tolist() for r in remote_boot] == [r.values.tolist() for r in local_boot]
    assert len({r.fval for r in local_boot}) == 5  # five different replicas
    finished = {k for k, state in ran if state == "memory"}
    # one task per likelihood: the 2 bins and the 3 restarts; the 5 replicas in one per worker
    # thread; the 3 bins dealt to one task per worker thread
    assert len(finished) == 2 + 1 + 2 + 2, finished
    for got, want in zip(remote_three, local_three, strict=True):
        assert [r.values.tolist() for r in got.ensemble] == [r.values.tolist() for r in want.ensemble]


def test_progress_of_many_fits(samples, capsys):
    """``progress=True`` keeps one line up to date (ending with the last fit); a callable
    hears of every fit as it ends."""
    lik = _likelihood(samples)
    fits = lik.fit_restarts(2, seed=3, progress=True, method="migrad")
    line = capsys.readouterr().out.replace("\r", "\n").splitlines()[-1].strip()
    want = f"restarts: 2 of 2 fits done, {len(fits.valid)} valid, best -2 ln L = {fits.best.fval:.10g}"
    assert line == want
    heard = []
    replicas = lik.bootstrap_fit(2, fits.best.values, seed=1,
                                 progress=lambda i, n, r: heard.append((i, n, r.valid)))
    # every replica heard of once, by its index, as it ends (in lockstep, in any order)
    assert sorted(heard) == [(0, 2, replicas.fits[0].valid), (1, 2, replicas.fits[1].valid)]


def test_one_progress_display_for_a_whole_binned_analysis(samples, capsys):
    """fit_bins(progress=True): one display, ending with every bin's best -2 ln L; a callable
    hears of every fit of the analysis once, by its place in it."""
    data, mc = samples
    kwargs = dict(data=_dataset(data), accepted_mc=_dataset(mc), by=ld.scalar("m"),
                  bins=ld.Bin([1.0, 1.5, 2.0]), restarts=3, seed=5)
    fits = ld.fit_bins(_waves(ld), progress=True, **kwargs)
    out = capsys.readouterr().out.replace("\r", "\n")
    final = out[out.rindex("fit_bins: 2 of 2 bins done"):].strip().splitlines()
    valid = sum(len(f.ensemble.valid) for f in fits)
    assert valid > 0
    assert final[0] == f"fit_bins: 2 of 2 bins done, 6 of 6 fits ({valid} valid)"
    def best(f):
        return "no valid fit" if f.best is None else f"best -2 ln L = {f.best.fval:.10g}"

    assert final[1:] == [f"bin {f.index} [{f.low:g}, {f.high:g}]: 3 of 3 fits, {best(f)}" for f in fits]
    heard = []
    again = ld.fit_bins(_waves(ld), progress=lambda i, n, r: heard.append((i, n, r.fval)), **kwargs)
    want = [(3 * b + j, 6, r.fval) for b, f in enumerate(again) for j, r in enumerate(f.ensemble)]
    assert sorted(heard) == want


def test_a_restart_that_fails_in_a_merged_round_fails_alone():
    """Restarts in lockstep: a start where the intensity is negative fails that fit only (its
    round is evaluated point by point), exactly as when the fits run one after another."""
    rng = np.random.default_rng(9)
    x = ld.scalar("x")
    model = ld.Model(ld.parameter("a", initial=(-1.0, 2.0), bounds=(-5.0, 5.0)) * x + 1.0 - x)
    data = _dataset({"x": rng.uniform(0.0, 1.0, 3000) ** 0.7})
    lik = ld.Likelihood([ld.NLL(model, data=data, accepted_mc=_dataset({"x": rng.uniform(0, 1, 20000)}))])
    together, alone = lik.fit_restarts(6, seed=4), lik.fit_restarts(6, seed=4, batch=False)
    assert [r.message for r in together] == [r.message for r in alone]
    assert [r.fval for r in together.valid] == [r.fval for r in alone.valid]
    assert together.failed and len(together.valid) >= 1  # some starts fail, the others converge
    assert all("NonPositiveIntensityError" in m for _, m in together.failed)
