"""The memory decision of a dataset's most recent preparation (laddu's ``Dataset.memory_decision``).

The runtime plans how each prepared dataset is held (resident or streamed, in chunks of
how many events) and records that decision on the :class:`~laddu_dask.data.dataset.Dataset`
it prepared, as a plain dictionary (the data layer knows nothing of the runtime's types).

Examples
--------
>>> import numpy as np
>>> import laddu_dask as ld
>>> ds = ld.Dataset.from_arrays(scalars={"x": np.arange(4.0)})
>>> ds.memory_decision() is None  # not prepared yet
True
>>> lik = ld.Likelihood([ld.NLL(ld.Model(ld.parameter("a", initial=1.0) * ld.scalar("x") + 1.0),
...                             data=ds, accepted_mc=ds)])
>>> _ = lik.value([1.0])
>>> d = ds.memory_decision()
>>> d["strategy"], d["chunk_events"]
('resident', 4)
"""

from __future__ import annotations

from typing import Any


class DecisionRecord:
    """The memory decision of the latest preparation of this dataset (a mixin of ``Dataset``)."""

    _memory_decision: dict[str, Any] | None = None

    def memory_decision(self) -> dict[str, Any] | None:
        """The memory decision of the most recent preparation of this dataset, or ``None``
        before any.

        Its keys are laddu's where the figure means the same (``label``: the prepared
        dataset's name, ``strategy``, ``chunk_events``, ``estimated_peak_bytes``,
        ``actual_high_water_bytes``, ``None``: not measured), then laddu-dask's (``resource``,
        ``requested_policy``, ``partitions``, ``estimated_bytes``, ``budget_bytes``,
        ``reason``). A dataset read without preparing a model over it has none (laddu's
        plans each read; laddu-dask plans each preparation).
        """
        return None if self._memory_decision is None else dict(self._memory_decision)

    def note_memory_decision(self, decision: dict[str, Any]) -> None:
        """Record ``decision`` (a dictionary) as this dataset's latest (the runtime calls it)."""
        self._memory_decision = dict(decision)
