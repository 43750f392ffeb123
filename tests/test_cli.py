"""The demo command: a seeded KsKs fit recovers the truth, and the CLI's exit codes."""

from __future__ import annotations

import json

import pytest

from laddu_dask import ksks
from laddu_dask.cli import main, run_demo


@pytest.mark.slow
def test_demo_recovers_truth_within_three_standard_errors():
    summary = run_demo(seed=2024, quiet=True)
    assert summary["valid"]
    names = [row["name"] for row in summary["parameters"]]
    assert names == list(ksks.TRUTH)
    for row in summary["parameters"]:
        # the fit moved from the displaced start to within 3 sigma of the truth
        assert row["start"] == pytest.approx(ksks.displaced_start()[row["name"]])
        assert row["error"] > 0
        assert abs(row["value"] - row["truth"]) < 3 * row["error"], row


def test_demo_command_writes_summary_and_exits_zero(tmp_path, capsys):
    out = tmp_path / "summary.json"
    code = main(["demo", "--data", "3000", "--mc", "30000", "--seed", "5", "--method", "lbfgsb",
                 "--json", str(out), "--outdir", str(tmp_path / "sample")])
    printed = capsys.readouterr().out
    assert code == 0
    summary = json.loads(out.read_text())
    assert summary["valid"] is True
    assert "d2_im" in printed and "pull" in printed
    assert (tmp_path / "sample" / "data.parquet").exists()


def test_unknown_command_is_rejected():
    with pytest.raises(SystemExit) as err:
        main(["nonsense"])
    assert err.value.code == 2
