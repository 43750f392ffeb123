"""The laddu-dask page of the dashboard, driven by real fits on a LocalCluster.

References: the fits' own results (``FitResult``: minimum, parameters, errors; ``fit_bins``'s
ensembles: each bin's best valid minimum), the cluster's prepared datasets (partitions per
dataset) and the execution's memory decisions; the page's data sources must show exactly
those. Its URL is fetched from the scheduler's dashboard server.
"""

from __future__ import annotations

import math
import urllib.error
import urllib.request

import numpy as np
import pytest

import laddu_dask as ld
from laddu_dask.runtime import dashboard
from laddu_dask.runtime.dashboard_page import PATH, FitPage, board_of

distributed = pytest.importorskip("distributed")
pytest.importorskip("bokeh")


def _model():
    costheta, phi = ld.scalar("costheta"), ld.scalar("phi")
    amp = ld.parameter("s", fixed=1.0) * ld.spherical_harmonic(0, 0, costheta=costheta, phi=phi)
    c = ld.complex(ld.parameter("p re", initial=(-1.0, 1.0), bounds=(-5.0, 5.0)),
                   ld.parameter("p im", initial=(-1.0, 1.0), bounds=(-5.0, 5.0)))
    return ld.Model((amp + c * ld.spherical_harmonic(1, 1, costheta=costheta, phi=phi)).norm_sqr())


def _events(n: int, seed: int) -> ld.Dataset:
    rng = np.random.default_rng(seed)
    return ld.Dataset.from_arrays(scalars={"m": rng.uniform(1.0, 2.0, n), "costheta": rng.uniform(-1, 1, n),
                                           "phi": rng.uniform(-math.pi, math.pi, n)}, chunk_size=n // 4)


def _board(scheduler, ready, what: str, seconds: float = 60.0):
    """The scheduler's board once ``ready(board)`` holds (the notes travel every 0.1 s)."""
    import time

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        board = board_of(scheduler)
        if board is not None and ready(board):
            return board
        time.sleep(0.05)
    raise AssertionError(f"waited {seconds} s for {what}")


@pytest.mark.timeout(300)
def test_a_fit_on_a_cluster_shows_on_the_laddu_dask_page():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address="127.0.0.1:0", silence_logs=50) as cluster, \
            distributed.Client(cluster) as client:
        ex = ld.Execution(client=client)
        lik = ld.Likelihood([ld.NLL(_model(), data=_events(2000, 1), accepted_mc=_events(8000, 2),
                                    name="waves")], execution=ex)
        result = lik.fit(initial=[0.3, -0.2])
        n_points = lik._dashboard_count
        board = _board(cluster.scheduler,
                       lambda b: "waves" in b.traces and b.traces["waves"].result is not None
                       and b.traces["waves"].evaluations == n_points,
                       f"{n_points} evaluations and the result")
        trace = board.traces["waves"]
        # every evaluation, in order; the fit's minimum among them, and the best is no higher
        assert list(trace.numbers) == list(range(1, n_points + 1))
        assert result.fval in list(trace.values) and trace.best <= result.fval
        assert trace.names == ["p re", "p im"]
        assert trace.parameters == result.values.tolist()
        assert trace.errors == [result.errors[n] for n in ("p re", "p im")]
        assert trace.result["valid"] == result.valid and trace.result["method"] == "lbfgsb"
        # every partition of both datasets on a worker of the cluster, each once
        workers = set(client.scheduler_info()["workers"])
        decided = {d.dataset for d in ex.memory_decisions()}
        assert "waves/data" in trace.placement and set(trace.placement) <= decided
        for held in trace.placement.values():
            assert set(held) <= workers
            ids = sorted(i for part in held.values() for i in part)
            assert ids == list(range(4))
        assert decided == set(trace.decisions)
        assert {k: v["strategy"] for k, v in trace.decisions.items()} == {
            d.dataset: d.strategy for d in ex.memory_decisions()}

        page = FitPage(cluster.scheduler)
        page.update()
        values = page.sources["values"].data
        assert values["value"] == list(trace.values) and values["evaluation"] == list(trace.numbers)
        params = page.sources["parameters"].data
        assert params["name"] == ["p re", "p im"] and params["value"] == result.values.tolist()
        assert params["error"] == [result.errors[n] for n in ("p re", "p im")]
        assert sorted(page.sources["workers"].data["dataset"]) == sorted(
            name for name, held in trace.placement.items() for _ in held)
        assert f"{n_points:,} evaluations" in page.headline.text
        assert not page.tables["bins"].visible and page.tables["workers"].visible  # no bins here
        assert ("valid" if result.valid else "NOT valid") in page.headline.text

        # served by the scheduler's own dashboard server, beside distributed's pages
        url = f"http://127.0.0.1:{cluster.scheduler.http_server.port}{PATH}"
        with urllib.request.urlopen(url, timeout=30) as response:
            assert response.status == 200 and b"bokeh" in response.read().lower()
        with pytest.raises(urllib.error.HTTPError, match="404"):  # a page it does not serve
            urllib.request.urlopen(url + "-nothing", timeout=30)


@pytest.mark.timeout(300)
def test_fit_bins_on_a_cluster_shows_bins_and_fits_done():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None, silence_logs=50) as cluster, \
            distributed.Client(cluster) as client:
        fits = ld.fit_bins(_model(), data=_events(3000, 3), accepted_mc=_events(6000, 4),
                           by=ld.scalar("m"), bins=ld.Bin([1.0, 1.5, 2.0]), restarts=3, seed=2,
                           execution=ld.Execution(client=client))
        board = _board(cluster.scheduler, lambda b: "fit_bins" in b.traces
                       and (b.traces["fit_bins"].progress or {}).get("fits_done") == 6, "six fits")
        progress = board.traces["fit_bins"].progress
        assert progress["bins_total"] == progress["bins_done"] == 2 and progress["fits_total"] == 6
        assert progress["valid"] == sum(r.valid for b in fits for r in b.ensemble)
        best = {label: value for label, value in progress["best"]}
        for b in fits:
            valid = [r.fval for r in b.ensemble if r.valid]
            assert best[b.ensemble.label] == (min(valid) if valid else None)
        page = FitPage(cluster.scheduler)
        page.update()
        assert "bins 2/2, fits 6/6" in page.headline.text
        assert page.sources["bins"].data["bin"] == [b.ensemble.label for b in fits]
        assert page.tables["bins"].visible


def test_aggregated_records_keep_the_busy_time_and_the_counts():
    notes = [("laddu-dask-nll", i, 10.0 + i, 10.0 + i + 0.002, 1, {"events": 500}) for i in range(1, 6)]
    notes.append(("laddu-dask-nll-evaluation", 5, 15.0, 15.01, 0, {"value": 3.5}))
    notes.append((dashboard.FIT_NOTE + "point", 5, 15.0, 15.0, 0,
                  {"label": "nll", "payload": {"value": 3.5}}))
    out = dashboard.aggregate(notes)
    worker = [n for n in out if n[0] == "laddu-dask-nll"]
    assert len(worker) == 1
    name, number, start, stop, thread, extra = worker[0]
    assert (number, thread, extra) == (5, 1, {"events": 2500, "calls": 5})
    assert stop == 15.002 and stop - start == pytest.approx(5 * 0.002, rel=1e-9)
    assert [n for n in out if n[0].startswith(dashboard.FIT_NOTE)] == notes[-1:]
    assert [n[5] for n in out if n[0].endswith("-evaluation")] == [{"value": 3.5, "calls": 1}]


def test_the_page_sends_on_only_the_new_evaluations_of_a_fit(monkeypatch):
    """Between two updates a fit adds evaluations: the page streams them after those shown
    (the whole series equals the board's), and replaces the series when it restarts."""
    from types import SimpleNamespace

    from laddu_dask.runtime.fit_board import FitBoard

    board = FitBoard()
    scheduler = SimpleNamespace(plugins={"laddu-dask-evaluations": SimpleNamespace(board=board)})
    page = FitPage(scheduler)
    streamed = []
    source = page.sources["values"]
    original = type(source).stream

    def stream(self, data, *args, **kwargs):
        streamed.append(len(data["value"]))
        return original(self, data, *args, **kwargs)

    monkeypatch.setattr(type(source), "stream", stream)
    for i in range(1, 4):
        board.ingest("nll", "point", i, float(i),
                     {"value": 10.0 - i, "parameters": [0.1 * i], "names": ["a"]})
    page.update()
    for i in range(4, 7):
        board.ingest("nll", "point", i, float(i), {"value": 10.0 - i, "parameters": [0.1 * i]})
    page.update()
    assert streamed == [3] and source.data["value"] == [9.0, 8.0, 7.0, 6.0, 5.0, 4.0]
    board.ingest("other", "point", 1, 7.0, {"value": 1.0, "parameters": [0.0], "names": ["a"]})
    page.update()  # the newest likelihood, from its start
    assert streamed == [3] and source.data["evaluation"] == [1] and source.data["value"] == [1.0]
    page.choice.value = "nll"  # picked in the menu: shown from then on, whatever is newer
    board.ingest("other", "point", 2, 8.0, {"value": 0.5, "parameters": [0.0]})
    page.update()
    assert source.data["evaluation"] == [1, 2, 3, 4, 5, 6] and page.choice.value == "nll"
