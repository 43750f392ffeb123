"""notebooks/quickstart.ipynb runs top to bottom (nbclient), on a small sample."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

NOTEBOOK = Path(__file__).resolve().parent.parent / "notebooks" / "quickstart.ipynb"


def test_quickstart_notebook_runs(monkeypatch):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    pytest.importorskip("matplotlib")
    monkeypatch.setenv("QUICKSTART_DATA", "3000")
    monkeypatch.setenv("QUICKSTART_MC", "30000")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                                     resources={"metadata": {"path": str(NOTEBOOK.parent)}})
    client.execute()
    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    text = "".join(o.get("text", "") for o in outputs if o.get("output_type") == "stream")
    assert "dashboard:" in text and "pull" in text and "ksks/accepted_mc" in text
    html = [o["data"]["text/html"] for o in outputs if "text/html" in o.get("data", {})]
    assert any("laddu_dask.Model" in h for h in html)  # Model, Dataset, Execution, FitResult
    assert any("FitResult" in h for h in html)
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert images, "the projection plot was not drawn"
    assert os.environ["QUICKSTART_DATA"] == "3000"
