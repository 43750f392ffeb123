"""Progress of many fits: :class:`Progress` for the restarts or replicas of one likelihood,
:class:`BinsProgress` for a whole binned analysis (bins done, fits done, each bin's best
-2 ln L), both one line in a terminal, one display in a notebook, whole lines in a file.

Examples
--------
>>> shown = []
>>> bins = {0: ("bin 0 [1, 1.5]", 2), 1: ("bin 1 [1.5, 2]", 1)}  # label, fits
>>> p = BinsProgress(lambda i, n, r: shown.append((i, n)), bins)
>>> class R:
...     valid, fval = True, 10.0
>>> p.note(1)(0, 1, R()); p.note(0)(1, 2, R()); p.note(0)(0, 2, R())
>>> shown  # the analysis' fit index (bin by bin, restart by restart) and its number of fits
[(2, 3), (1, 3), (0, 3)]
>>> p.text().splitlines()[0]
'fit_bins: 2 of 2 bins done, 3 of 3 fits (3 valid)'
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from laddu_dask.likelihood.progress import ProgressLine

__all__ = ["BinsProgress", "Progress"]


class Progress:
    """What ``progress`` asks for while many fits run: ``True`` keeps one line (a terminal)
    or display (a notebook) up to date with the fits done, the valid ones and the best
    -2 ln L; a callable gets ``(index, n, result)`` for every fit that ends."""

    def __init__(self, progress: bool | Callable, label: str, n: int) -> None:
        self.progress, self.label, self.n = progress, label, n
        self.line = ProgressLine() if progress is True else None
        self.done: list[Any] = []

    def __call__(self, i: int, result: Any) -> None:
        self.done.append(result)
        if self.line is not None:
            final = len(self.done) == self.n
            if self.line.due(final):
                self.line.show(self._text(), final=final)
        elif callable(self.progress):
            self.progress(i, self.n, result)

    def _text(self) -> str:
        valid = [r.fval for r in self.done if r.valid]
        best = f", best -2 ln L = {min(valid):.10g}" if valid else ""
        return f"{self.label}: {len(self.done)} of {self.n} fits done, {len(valid)} valid{best}"


def progress_sink(likelihoods: list[Any], label: str) -> Callable[[dict[str, Any]], None] | None:
    """Where a many-fit run's :meth:`BinsProgress.summary` goes on a cluster: the laddu-dask
    page of the dashboard, as ``label`` (``None`` on a local execution)."""
    client = next((getattr(getattr(lik, "execution", None), "client", None) for lik in likelihoods), None)
    if client is None:
        return None
    from laddu_dask.runtime.dashboard import record_fit_note  # distributed: with a client only

    return lambda summary: record_fit_note(client, label, "progress", summary)


class BinsProgress:
    """One display for every fit of a binned analysis (:func:`~laddu_dask.fit_bins`).

    ``True`` shows the bins done, the fits done (and valid) and, per bin done, its best
    -2 ln L: in a terminal the summary and the last bin finished on one line, in a notebook
    a display with a line per bin, in a file or pipe whole lines; the last update ends with
    every bin.  A callable gets ``(index, n, result)`` for every fit that ends, ``index`` its
    place in the whole analysis (bin by bin, then restart by restart) and ``n`` the number
    of fits.

    Parameters
    ----------
    progress : bool or callable
    bins : dict
        Bin index -> ``(label, number of fits)``, in bin order.
    sink : callable, optional
        Gets :meth:`summary` after every fit (the dashboard's page, on a cluster).
    """

    def __init__(self, progress: bool | Callable, bins: dict[int, tuple[str, int]],
                 sink: Callable[[dict[str, Any]], None] | None = None) -> None:
        self.progress, self.bins, self.sink = progress, dict(bins), sink
        self.line = ProgressLine() if progress is True else None
        self.first: dict[int, int] = {}
        n = 0
        for i, (_, fits) in self.bins.items():
            self.first[i], n = n, n + fits
        self.n = n
        self.done: dict[int, list[Any]] = {i: [] for i in self.bins}
        self.last: int | None = None

    def note(self, i: int) -> Callable[[int, int, Any], None]:
        """The ``progress(j, n, result)`` callable of bin ``i``'s fits (``n`` its fits)."""
        return lambda j, n, result: self(i, j, result)

    def __call__(self, i: int, j: int, result: Any) -> None:
        self.done[i].append(result)
        self.last = i
        if self.sink is not None:
            self.sink(self.summary())
        if self.line is not None:
            final = sum(map(len, self.done.values())) == self.n
            if self.line.due(final):
                self.line.show(self.text(every_bin=self.line.notebook or final), final=final)
        elif callable(self.progress):
            self.progress(self.first[i] + j, self.n, result)

    def summary(self) -> dict[str, Any]:
        """Bins and fits done, valid fits and each finished bin's best -2 ln L (``None``: no
        valid fit), as plain numbers."""
        finished = [i for i in self.bins if len(self.done[i]) == self.bins[i][1]]
        fits = [r for rs in self.done.values() for r in rs]
        best = []
        for i in finished:
            valid = [float(r.fval) for r in self.done[i] if r.valid]
            best.append([self.bins[i][0], min(valid) if valid else None])
        return {"bins_total": len(self.bins), "bins_done": len(finished), "fits_total": self.n,
                "fits_done": len(fits), "valid": sum(bool(r.valid) for r in fits), "best": best}

    def _best(self, i: int) -> str:
        valid = [r.fval for r in self.done[i] if r.valid]
        best = f"best -2 ln L = {min(valid):.10g}" if valid else "no valid fit"
        return f"{self.bins[i][0]}: {len(self.done[i])} of {self.bins[i][1]} fits, {best}"

    def text(self, every_bin: bool = True) -> str:
        """The display: the summary, then each finished bin's best (``every_bin``) or the
        last one's."""
        finished = [i for i in self.bins if len(self.done[i]) == self.bins[i][1]]
        fits = [r for rs in self.done.values() for r in rs]
        head = (f"fit_bins: {len(finished)} of {len(self.bins)} bins done, {len(fits)} of {self.n} fits "
                f"({sum(bool(r.valid) for r in fits)} valid)")
        if every_bin:
            return "\n".join([head, *(self._best(i) for i in finished)])
        return head if self.last is None else f"{head}; {self._best(self.last)}"
