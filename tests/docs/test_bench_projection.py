"""The projection benchmark: its measurements, its figures against laddu, its README rendering."""

from __future__ import annotations

import json
import math
import os
import shutil

import numpy as np
import pytest
from laddu_reference import needs_laddu

from laddu_dask import ksks
from laddu_dask_bench import projection_bench as pb
from laddu_dask_bench import readme
from laddu_dask_bench.results import RESULTS_DIR

_MEASURE = """
import json, sys
sys.path.insert(0, sys.argv[1])
import numpy as np
from laddu_dask_bench import projection_bench as pb

def allocate():
    a = np.ones(8 * 2**20)  # 64 MiB, touched
    return float(a[-1])

seconds, out, added = pb.measure(allocate, repeat=2)
_, _, small = pb.measure(lambda: 1 + 1, repeat=1)
print(json.dumps({"seconds": seconds, "out": out, "added": added, "small": small}))
"""


def test_measure_reports_the_peak_a_call_adds():
    """In a fresh process, as the benchmark measures (a long-lived test process, with other
    tests' threads freeing memory during the call, would move its resident memory)."""
    import subprocess
    import sys
    from pathlib import Path

    if not pb._reset_peak():
        pytest.skip("no /proc/self/clear_refs on this system")
    root = str(Path(pb.__file__).resolve().parents[1])  # benchmarks/, the package's folder
    env = {**os.environ, **pb.MALLOC_ENV}
    run = subprocess.run([sys.executable, "-I", "-c", _MEASURE, root], capture_output=True, text=True,
                         env=env, timeout=120)
    assert run.returncode == 0, run.stderr
    got = json.loads(run.stdout)
    assert got["out"] == 1.0 and got["seconds"] > 0
    assert 60 * pb.MIB <= got["added"] <= 200 * pb.MIB
    assert got["small"] < 16 * pb.MIB


EVENTS = 30_000


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("projection"))
    pb.sample(path, EVENTS, 2)
    return path


def test_the_sample_is_written_once_and_reused(folder):
    files = pb._files(os.path.join(folder, "accmc"))
    assert len(files) == 2
    stamp = os.path.getmtime(files[0])
    assert pb.sample(folder, EVENTS, 2) == {k: os.path.join(folder, k) for k in ("data", "accmc")}
    assert os.path.getmtime(files[0]) == stamp
    assert pb._raw_whole(files) == EVENTS and pb._raw_batches(files) == EVENTS


def test_peaks_of_the_memory_pass_replace_the_timing_pass_peaks():
    timing = {"raw_read": {"whole": {"s": 1.0, "peak_added_mib": 0.0}},
              "laddu": {"status": "compared", "rows": {"read": {"s": 2.0, "peak_added_mib": 0.0}}}}
    memory = {"raw_read": {"whole": {"s": 9.0, "peak_added_mib": 12.5}},
              "laddu": {"status": "compared", "rows": {"read": {"s": 9.0, "peak_added_mib": 3.0}}}}
    pb._peaks(timing, memory)
    assert timing["raw_read"]["whole"] == {"s": 1.0, "peak_added_mib": 12.5}
    assert timing["laddu"]["rows"]["read"] == {"s": 2.0, "peak_added_mib": 3.0}


@needs_laddu
def test_a_small_run_agrees_with_laddu_and_renders(folder):
    # 64 MiB keeps the 30,000 events' prepared data (about 2 MiB) resident
    r = pb.run(EVENTS, 2, "64 MiB", 1, laddu_max_events=EVENTS, folder=folder, command="test")
    assert r["laddu"]["status"] == "compared"
    assert r["agreement"]["max_weight_relative_difference"] < 1e-10
    assert r["agreement"]["integral_relative_difference"] < 1e-10
    assert r["checks"]["weights_sum_minus_integral_rel"] < 1e-12
    assert r["checks"]["dask_sum_minus_integral_rel"] < 1e-12
    assert r["checks"]["resident_minus_streamed_integral_rel"] < 1e-12
    # the tagged D wave is part of the whole model's integral
    assert 0 < r["checks"]["d_wave_integral"] < r["checks"]["whole_integral"]
    rows = r["laddu_dask"]["rows"]
    assert set(rows) == {f"{w}_{k}" for w in ("whole", "d_wave")
                         for k in ("integral", "weights", "weight_sum_dask")} | {"whole_integral_resident"}
    assert all(row["s"] > 0 for row in rows.values())
    # the whole-model integral is laddu's (and the fsum of laddu's weights)
    import laddu

    from laddu_dask_bench.laddu_ksks import ksks_intensity_expr

    gen = laddu.read_parquet(os.path.join(folder, "accmc", "*.parquet"))
    data = laddu.read_parquet(os.path.join(folder, "data", "*.parquet"))
    lik = laddu.Likelihood([laddu.NLL(laddu.Model(ksks_intensity_expr("bw").tagged("all")), data=data,
                                      accepted_mc=data, name="ksks")])
    p = [dict(ksks.TRUTH)[n] for n in lik.parameter_names]
    theirs = math.fsum(np.asarray(lik.projection("ksks", generated_mc=gen, tags=["all"]).weights(p)))
    assert r["checks"]["whole_integral"] == pytest.approx(theirs, rel=1e-10)
    text = " ".join(pb.readme_lines(json.loads(json.dumps(r))))
    assert "30,000 generated-MC events of the KsKs toy in 2 Parquet files" in text
    assert "| per-event weights, whole model, against laddu |" in text


@needs_laddu
def test_a_budget_below_one_chunk_is_a_typed_error(folder):
    from laddu_dask.errors import BudgetError

    with pytest.raises(BudgetError, match="'ksks/generated_mc/integrals' .* host budget of 1.00 MiB"):
        pb.run_ours({k: os.path.join(folder, k) for k in ("data", "accmc")}, "1 MiB", 1)


def test_a_laddu_run_above_the_flag_is_skipped(folder):
    r = pb.run(EVENTS, 2, "64 MiB", 1, laddu_max_events=EVENTS - 1, folder=folder, command="test")
    assert r["laddu"] == {"status": "skipped: 30,000 events is above --laddu-max-events 29,999"}
    assert "agreement" not in r


def _render_edited(tmp_path, edit):
    for n in readme.FILES:
        shutil.copy(os.path.join(RESULTS_DIR, n), tmp_path / n)
    path = tmp_path / "projection.json"
    results = json.loads(path.read_text())
    edit(results)
    path.write_text(json.dumps(results))
    return " ".join(readme.render(str(tmp_path)).split())


def test_the_projection_figures_are_rendered_from_their_results(tmp_path):
    def edit(r):
        r["laddu_dask"]["rows"]["whole_weights"] = {"s": 2.0, "peak_added_mib": 300.0}
        r["raw_read"]["whole"] = {"s": 0.5, "peak_added_mib": 1000.0}

    rendered = _render_edited(tmp_path, edit)
    assert ("| per-event weights (NumPy, 8 bytes an event), whole model, against the whole-file read "
            "| 2.00 s | 300 MiB | 500.00 ms | 1,000 MiB | 4.00x |") in rendered


def test_a_skipped_laddu_is_said_not_compared(tmp_path):
    def edit(r):
        r["laddu"] = {"status": "skipped: 10,000,000 events is above --laddu-max-events 1,000,000"}
        r.pop("agreement", None)

    rendered = _render_edited(tmp_path, edit)
    assert "against laddu |" not in rendered
    assert "laddu: skipped: 10,000,000 events is above --laddu-max-events 1,000,000." in rendered
