"""How a :class:`~laddu_dask.data.dataset.Dataset` shows itself: a one-line ``repr`` and a notebook table.

Examples
--------
>>> import numpy as np
>>> import laddu_dask as ld
>>> repr(ld.Dataset.from_arrays(scalars={"x": np.zeros(2)})).split(";")[0]
'<Dataset: 2 events in 1 partition'
"""

from __future__ import annotations

import html

from laddu_dask.views import Raw, bytes_text, key_values

__all__ = ["DatasetDisplay"]


class DatasetDisplay:
    """``__repr__`` and ``_repr_html_`` of a dataset (uses its schema, sizes and sources)."""

    def _events_text(self) -> str:
        """The number of events, or that it is learned at the first use (nothing is computed
        to show a dataset)."""
        if not getattr(self, "lengths_known", True):
            return "? events (learned at the first use)"
        return f"{self.n_events:,} events"

    def __repr__(self) -> str:
        s = self.schema
        p4 = ", ".join(s.p4s) or "-"
        sc = ", ".join(s.scalars) or "-"
        return (
            f"<Dataset: {self._events_text()} in {self.n_partitions} "
            f"partition{'' if self.n_partitions == 1 else 's'}; "
            f"p4s: {p4}; scalars: {sc}; weights: {'stored' if s.has_weight else 'all 1'}; "
            f"memory_policy={self.memory_policy!r}; source: {self._source_label()}>"
        )

    def _repr_html_(self) -> str:
        s = self.schema
        shown = list(self.sources[:3])
        if len(self.sources) > 3:
            shown.append(f"... and {len(self.sources) - 3} more")
        known = getattr(self, "lengths_known", True)
        rows = [
            ("Events", self._events_text().removesuffix(" events")),
            ("Partitions", f"{self.n_partitions} (chunk size {self.chunk_size:,})" if known
             else f"{self.n_partitions} (one per block of the collection)"),
            ("Four-vectors", ", ".join(s.p4s) or "none"),
            ("Scalars", ", ".join(s.scalars) or "none"),
            ("Weights", "stored" if s.has_weight else "none (all 1)"),
            ("Size loaded (f64)", bytes_text(self.estimate_nbytes()) if known else "?"),
            ("Memory policy", self.memory_policy),
            ("Sources", Raw("<br>".join(html.escape(x) for x in shown))),
        ]
        return key_values(rows, caption="laddu_dask Dataset")
