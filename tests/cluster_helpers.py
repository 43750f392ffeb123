"""What the cluster tests ask Dask about prepared datasets (where they are, what was recomputed)."""

from __future__ import annotations

import time

import pytest


def holders(client, prepared) -> dict[str, list[int]]:
    """Worker address -> the partitions of ``prepared`` it holds (Dask's who_has)."""
    who = client.who_has(prepared.partitions)
    out: dict[str, list[int]] = {}
    for i, f in enumerate(prepared.partitions):
        for addr in who[f.key]:
            out.setdefault(addr, []).append(i)
    return out


def recomputed(client, prepared) -> int:
    """Partitions of ``prepared`` that Dask computed more than once (lost, then recomputed)."""
    keys = [f.key for f in prepared.partitions]
    story = client.run_on_scheduler(lambda dask_scheduler: dask_scheduler.story(*keys))
    return sum(1 for k in keys if sum(1 for t in story if t[0] == k and t[2] == "memory") > 1)


def wait_until(condition, seconds: float, what: str) -> None:
    """Poll ``condition`` until it holds; fail the test after ``seconds``."""
    end = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > end:
            pytest.fail(f"waited {seconds} s for {what}")
        time.sleep(0.02)
