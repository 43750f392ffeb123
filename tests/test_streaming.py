"""Larger than memory: a sample several times the host budget streams within the budget.

The evaluation runs in a subprocess (tests/scripts/stream_probe.py) that resets the
kernel's peak-RSS counter after warming up, so the measured peak is what reading and
evaluating the sample added.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

pytestmark = pytest.mark.slow

PROBE = Path(__file__).parent / "scripts" / "stream_probe.py"
N_EVENTS = 8_000_000
BUDGET = 64 * 2**20


@pytest.fixture(scope="module")
def big_sample(tmp_path_factory):
    path = tmp_path_factory.mktemp("big") / "mc.parquet"
    rng = np.random.default_rng(1)
    schema = pa.schema([("x", pa.float64()), ("y", pa.float64()), ("weight", pa.float64())])
    with pq.ParquetWriter(path, schema) as writer:
        for start in range(0, N_EVENTS, 1_000_000):
            m = min(1_000_000, N_EVENTS - start)
            writer.write_table(pa.table({"x": rng.uniform(-1, 1, m), "y": rng.uniform(-1, 1, m),
                                         "weight": rng.uniform(0.5, 1.5, m)}), row_group_size=65536)
    return path


def _probe(path, budget, policy):
    out = subprocess.run([sys.executable, str(PROBE), str(path), str(budget), policy],
                         capture_output=True, text=True, timeout=600, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_sample_four_times_the_budget_streams_within_it(big_sample):
    streamed = _probe(big_sample, BUDGET, "fastest")
    assert streamed["storage"][-1] == "streaming"
    assert streamed["estimated"] > 3.5 * BUDGET  # resident storage would need ~4x the budget
    assert "more than the host budget" in streamed["reason"]
    added = streamed["peak"] - streamed["base"]
    # the budget bounds the prepared data; the allocators' caches add a little on top
    # (measured here: 66-73 MiB for the 64 MiB budget; resident storage needs 244 MiB)
    assert added < 1.5 * BUDGET, f"peak RSS grew by {added / 2**20:.1f} MiB"
    resident = _probe(big_sample, 4 * 2**30, "fastest")
    assert resident["storage"][-1] == "resident"
    assert resident["peak"] - resident["base"] > 3 * BUDGET  # the resident path really holds it
    # the same numbers, to the last bit (JSON floats round-trip exactly)
    assert streamed["value"] == resident["value"]
    assert streamed["gradient"] == resident["gradient"]
