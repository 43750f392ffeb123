"""``laddu-dask demo`` reports an invalid fit by its exit status (issue 30, item 1).

The documented statuses (``laddu_dask.cli``): 0 for a valid fit, 1 for an invalid one.  The
demo's fit is made invalid at its boundary, cheaply and for a real reason: every
``Likelihood.fit`` it runs is capped at a handful of evaluations, so MIGRAD stops at its call
limit far from the minimum of a ten-parameter fit.
"""

from __future__ import annotations

import json

import laddu_dask as ld
from laddu_dask.cli import main


def test_demo_whose_fit_is_invalid_exits_1_and_says_invalid(tmp_path, capsys, monkeypatch):
    fit, results = ld.Likelihood.fit, []

    def capped(self, *args, **options):
        results.append(fit(self, *args, **{**options, "max_calls": 5}))
        return results[-1]

    monkeypatch.setattr(ld.Likelihood, "fit", capped)
    out = tmp_path / "summary.json"
    code = main(["demo", "--data", "500", "--mc", "2000", "--json", str(out)])
    printed = capsys.readouterr()
    (result,) = results
    assert not result.valid  # the reference: the fit the demo ran is invalid
    assert code == 1
    assert "fit INVALID: -2 ln L = " in printed.out and "fit valid" not in printed.out
    assert printed.err == ""  # an invalid fit is a result, not an error
    assert json.loads(out.read_text())["valid"] is False
