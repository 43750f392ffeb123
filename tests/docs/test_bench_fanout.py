"""The fan-out benchmark's model: fitted on the committed figures, validated, rendered from them."""

from __future__ import annotations

import json
import os
import shutil

from laddu_dask_bench import readme
from laddu_dask_bench.fanout_bench import model
from laddu_dask_bench.results import RESULTS_DIR


def _results() -> dict:
    with open(os.path.join(RESULTS_DIR, "fanout.json")) as f:
        return json.load(f)


def test_the_committed_model_is_the_one_fitted_on_the_committed_figures():
    r = _results()
    p = r["provenance"]["parameters"]
    fitted = model(r["rows"], r["hop_rows"], p["predict"], p["model_fan_in"], p["fit_max_workers"])
    assert fitted == r["model"]


def test_the_hop_is_measured_where_each_worker_has_a_core_and_the_model_is_validated():
    """The hop runs give every worker one partition on at most two workers; the validation is
    a tree of two levels, whose modelled and measured wall times are both on the page."""
    r = _results()
    hops = [h for h in r["hop_rows"] if h["role"] == "hop"]
    assert hops and all(h["workers"] <= 2 and h["partitions"] == h["workers"] for h in hops)
    assert all(h["workers_holding_data"] == h["workers"] for h in r["hop_rows"])
    tree = [v for v in r["model"]["validation"] if v["mode"] == "tree"]
    assert tree and all(v["depth"] >= 2 for v in tree)
    page = " ".join(readme.render(RESULTS_DIR).split())
    for v in tree:
        assert (f"| {v['workers']} | tree (fan-in {v['fan_in']}) | {v['depth']} | "
                f"{1e3 * v['predicted_wall_s']:.2f} ms | {1e3 * v['measured_wall_s']:.2f} ms |") in page


def test_the_fanout_model_is_rendered_from_its_results(tmp_path):
    for name in readme.FILES:
        shutil.copy(os.path.join(RESULTS_DIR, name), tmp_path / name)
    path = tmp_path / "fanout.json"
    r = json.loads(path.read_text())
    r["model"]["fit"]["h_s"] = 0.00123
    r["model"]["validation"][-1]["measured_wall_s"] = 0.00987
    path.write_text(json.dumps(r))
    words = " ".join(readme.render(str(tmp_path)).split())
    assert "a hop h = 1.23 ms" in words
    assert "| 9.87 ms |" in words
