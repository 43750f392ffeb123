"""Projection histograms and plot_projection (laddu_dask.results, issue 13 item 1):
the fit's histograms against laddu 0.28.1's projection weights on the same events."""

from __future__ import annotations

import math

import numpy as np
import pytest
from laddu_reference import laddu, needs_laddu
from test_results_projection import ACC, DATA, POINT, TAGS, build, ours_ds, theirs_ds

import laddu_dask as ld
from laddu_dask.errors import ModelError

EDGES = np.linspace(0.6, 1.6, 11)


def _likelihoods(term_name):
    term = getattr(ld, term_name)
    ours = ld.Likelihood([term(build(ld), data=ours_ds(DATA), accepted_mc=ours_ds(ACC), name="t")])
    theirs = None
    if laddu is not None:
        theirs = laddu.Likelihood([getattr(laddu, term_name)(build(laddu), data=theirs_ds(DATA),
                                                             accepted_mc=theirs_ds(ACC), name="t")])
    return ours, theirs


def _fsum_hist(x, w, edges):
    slot = np.searchsorted(edges, x, side="right") - 1
    return np.array([math.fsum(w[slot == k]) for k in range(len(edges) - 1)])


@needs_laddu
@pytest.mark.parametrize("term_name", ["NLL", "ExtendedNLL"])
def test_histograms_match_laddus_projection_weights(term_name):
    ours, theirs = _likelihoods(term_name)
    h = ld.projection_histograms(ours, "t", POINT, ld.scalar("x"), bins=ld.Bin(EDGES.tolist()))
    x_acc = ACC[0]["x"]
    acc_l = theirs_ds(ACC)
    full = np.asarray(theirs.projection("t", generated_mc=acc_l, tags=list(TAGS)).weights(POINT))
    scale = 1.0 if term_name == "ExtendedNLL" else math.fsum(DATA[1]) / math.fsum(full)
    assert h.scale == pytest.approx(scale, rel=1e-12)
    want = _fsum_hist(x_acc, full, EDGES) * scale
    assert np.allclose(h.fit.counts, want, rtol=1e-10, atol=0)
    assert np.allclose(h.fit.errors, np.sqrt(_fsum_hist(x_acc, full**2, EDGES)) * scale, rtol=1e-10)
    for wave in TAGS:
        w = np.asarray(theirs.projection("t", generated_mc=acc_l, tags=[wave]).weights(POINT))
        assert np.allclose(h.waves[wave].counts, _fsum_hist(x_acc, w, EDGES) * scale, rtol=1e-10), wave
    assert h.data.counts == _fsum_hist(DATA[0]["x"], DATA[1], EDGES).tolist()  # exact sums
    sigma = np.hypot(h.data.errors, h.fit.errors)
    assert np.allclose(h.residuals, (np.asarray(h.data.counts) - h.fit.counts) / sigma, rtol=1e-14)


def test_histograms_do_not_depend_on_partitioning():
    ours, _ = _likelihoods("NLL")
    other = ld.Likelihood([ld.NLL(build(ld), data=ld.Dataset.from_arrays(scalars=DATA[0], weights=DATA[1],
                                                                       chunk_size=41),
                                  accepted_mc=ld.Dataset.from_arrays(scalars=ACC[0], weights=ACC[1],
                                                                     chunk_size=77), name="t")])
    expr = ld.scalar("c") * ld.scalar("x")
    a = ld.projection_histograms(ours, "t", POINT, expr, bins=8, range=(-1.6, 1.6), waves=["S"])
    b = ld.projection_histograms(other, "t", POINT, expr, bins=8, range=(-1.6, 1.6), waves=["S"])
    assert a.fit.counts == b.fit.counts and a.data.counts == b.data.counts
    assert a.waves["S"].counts == b.waves["S"].counts and list(a.waves) == ["S"]


def test_plot_projection_draws_every_histogram(tmp_path):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ours, _ = _likelihoods("ExtendedNLL")
    h = ld.projection_histograms(ours, "t", POINT, ld.scalar("x"), bins=10, range=(0.6, 1.6), label="x [GeV]")
    fig, (main, pulls) = ld.plot_projection(h)
    labels = main.get_legend_handles_labels()[1]
    assert labels[0] == "Fit" and set(TAGS) <= set(labels) and "Data" in labels
    assert pulls.get_xlabel() == "x [GeV]" and pulls.get_ylabel() == "Pull"
    assert len(pulls.patches) == 10
    fig.savefig(tmp_path / "p.png")
    assert (tmp_path / "p.png").stat().st_size > 1000
    plt.close(fig)
    fig, axes = plt.subplots(1, 2)
    _, (main, pulls) = ld.plot_projection(h, ax=axes[0])
    assert pulls is None and main is axes[0] and main.get_xlabel() == "x [GeV]"
    plt.close(fig)


def test_histogram_errors():
    ours, _ = _likelihoods("NLL")
    with pytest.raises(ModelError, match="pass range="):
        ld.projection_histograms(ours, "t", POINT, ld.scalar("x"), bins=10)
    with pytest.raises(ModelError, match="strictly increasing"):
        ld.projection_histograms(ours, "t", POINT, ld.scalar("x"), bins=[1.0, 0.5])
    with pytest.raises(ModelError, match="needs an expression"):
        ld.projection_histograms(ours, "t", POINT, "x", bins=[0.0, 1.0])
    with pytest.raises(ModelError, match="no tag 'Q'"):
        ld.projection_histograms(ours, "t", POINT, ld.scalar("x"), bins=[0.0, 1.0], waves=["Q"])
    with pytest.raises(ld.SchemaError, match="y"):
        ld.projection_histograms(ours, "t", POINT, ld.scalar("y"), bins=[0.0, 1.0])


def test_on_a_cluster_the_partitions_are_projected_on_the_workers():
    """Weights, integrals and histograms are worker tasks, and bitwise the local results."""
    distributed = pytest.importorskip("distributed")
    from cluster_helpers import local_cluster
    from test_results_projection import GEN

    gen = ours_ds(GEN)
    local, _ = _likelihoods("ExtendedNLL")
    want_w = local.projection("t", generated_mc=gen, tags=["S", "D"]).weights(POINT)
    want_h = ld.projection_histograms(local, "t", POINT, ld.scalar("x"), bins=5, range=(0.6, 1.6))
    for client in local_cluster(2):
        term = ld.ExtendedNLL(build(ld), data=ours_ds(DATA), accepted_mc=ours_ds(ACC), name="t")
        lik = ld.Likelihood([term], execution=ld.Execution(client=client))
        with distributed.get_task_stream(client) as stream:
            proj = lik.projection("t", generated_mc=gen, tags=["S", "D"])
            assert np.array_equal(proj.weights(POINT), want_w)
            h = ld.projection_histograms(lik, "t", POINT, ld.scalar("x"), bins=5, range=(0.6, 1.6))
        assert h.fit.counts == want_h.fit.counts and h.waves["P"].counts == want_h.waves["P"].counts
        assert proj.generated_integral(POINT) == math.fsum(want_w)
        names = {str(t["key"]) for t in stream.data}
        assert sum("laddu-project-" in k and "-load-" not in k for k in names) == gen.n_partitions
        assert any("laddu-hist-fit" in k for k in names)
        workers = {t["worker"] for t in stream.data}
        assert workers <= set(client.scheduler_info()["workers"])
