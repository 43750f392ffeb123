"""Mass-independent (binned) fits: one independent likelihood per bin of an expression.

``fit_bins(model, data=, accepted_mc=, by=expr, bins=Bin(edges))`` is laddu's tutorial
procedure in one call: ``bin_by`` on the data and on the accepted MC (lazy selections,
see :meth:`~laddu_dask.Dataset.bin_by`), one ``NLL`` (or ``ExtendedNLL``) per bin, and
``restarts`` fits of each from starts sampled with the bin's own seed.  A bin whose fits
fail (no events, a non-positive intensity, no valid minimum) is reported in its
ensemble; the other bins complete.

Examples
--------
>>> import numpy as np
>>> import laddu_dask as ld
>>> x, m = ld.scalar("x"), ld.scalar("m")
>>> model = ld.Model(ld.parameter("a", initial=(0.5, 5.0), bounds=(0.0, 10.0)) * x * x + 1.0)
>>> rng = np.random.default_rng(1)
>>> data = ld.Dataset.from_arrays(scalars={"x": rng.uniform(0, 1, 800) ** 0.5, "m": rng.uniform(0, 1, 800)})
>>> mc = ld.Dataset.from_arrays(scalars={"x": rng.uniform(0, 1, 6000), "m": rng.uniform(0, 1, 6000)})
>>> fits = ld.fit_bins(model, data=data, accepted_mc=mc, by=m, bins=ld.Bin.uniform(2, low=0, high=1),
...                    restarts=2, seed=3)
>>> [(f.index, f.low, f.high, len(f.ensemble.valid)) for f in fits]
[(0, 0.0, 0.5, 2), (1, 0.5, 1.0, 2)]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from laddu_dask.analysis.ensembles import FitEnsemble, failed_fit
from laddu_dask.analysis.progress import BinsProgress, progress_sink
from laddu_dask.analysis.replicas import replica_seeds, shared_load_limit
from laddu_dask.analysis.restarts import (
    FIT_FAILURES,
    fit_each,
    restart_starts,
    same_start_warning,
    start_note,
    start_vector,
)
from laddu_dask.analysis.tasks import fit_as_tasks, runs_as_tasks
from laddu_dask.data.operations import Bin
from laddu_dask.data.shared_loads import shared_parent_loads
from laddu_dask.expr.node import Expr
from laddu_dask.likelihood.fit import check_fit_options
from laddu_dask.likelihood.likelihood import Likelihood
from laddu_dask.likelihood.terms import NLL, ExtendedNLL

__all__ = ["BinFit", "TermKinds", "binned_likelihoods", "fit_bins"]

#: The term classes a binned analysis builds, ``(nll, extended)``.
TermKinds = tuple[type[NLL], type[ExtendedNLL]]


@dataclass(frozen=True)
class BinFit:
    """The fits of one bin: its index and edges, its likelihood (None when it could not be
    built) and the ensemble of its restarts (``ensemble.best`` is the bin's result)."""

    index: int
    low: float
    high: float
    likelihood: Likelihood | None
    ensemble: FitEnsemble

    @property
    def best(self) -> Any:
        """The bin's best valid fit (None when none is)."""
        return self.ensemble.best if self.ensemble.valid else None


def binned_likelihoods(model: Any, *, data: Any, accepted_mc: Any, by: Expr, bins: Bin | Sequence[float],
                       execution: Any = None, extended: bool = False, name: str = "bin",
                       kinds: TermKinds = (NLL, ExtendedNLL)) -> list[tuple[Any, Likelihood | Exception]]:
    """``(bin, likelihood)`` for every bin of ``by``: the data's ``BinnedDataset`` and a
    :class:`~laddu_dask.Likelihood` of one term on the bin's data and accepted MC (or the
    error that kept it from being built, such as a bin without events).

    ``kinds`` are the term classes, ``(nll, extended)``: the public ones when called as
    ``ld.binned_likelihoods`` (:mod:`laddu_dask.facade`), whose likelihoods are
    ``ld.Likelihood`` objects (the term's :meth:`~laddu_dask.likelihood.terms.NLL.likelihood_type`).
    """
    term = kinds[1] if extended else kinds[0]
    out: list[tuple[Any, Likelihood | Exception]] = []
    for b, mc in zip(data.bin_by(by, bins=bins), accepted_mc.bin_by(by, bins=bins), strict=True):
        try:
            lik: Likelihood | Exception = term.likelihood_type()(
                [term(model, data=b.dataset, accepted_mc=mc.dataset, name=f"{name} {b.index}")],
                execution=execution)
        except FIT_FAILURES as exc:
            lik = exc
        out.append((b, lik))
    return out


def fit_bins(model: Any, *, data: Any, accepted_mc: Any, by: Expr, bins: Bin | Sequence[float],
             restarts: int = 1, initial: Any = None, seed: int = 0, execution: Any = None,
             extended: bool = False, method: str | None = None, progress: bool | Callable = False,
             kinds: TermKinds = (NLL, ExtendedNLL), **options: Any) -> list[BinFit]:
    """Fit every bin of ``by`` independently, ``restarts`` times each (see the module).

    Bin ``i`` samples its starts with seed ``replica_seeds(seed, n_bins)[i]``, so a bin's
    fits do not depend on the others; ``initial`` (when given) is every bin's first start.
    ``method`` and ``**options`` are :meth:`~laddu_dask.Likelihood.fit`'s: the default,
    laddu's L-BFGS-B, runs each bin's restarts in lockstep
    (:mod:`~laddu_dask.analysis.lockstep`) and reached every bin's best minimum of the KsKs
    benchmark (30 bins x 20 restarts) with a third of MIGRAD's evaluations (40,687 against
    129,576) in half its time; ``method="migrad"`` runs MIGRAD + HESSE.  ``progress``:
    ``True`` keeps one display of the whole analysis up to date (bins done, fits done and
    valid, each finished bin's best -2 ln L; a terminal line, a notebook display, whole lines
    in a file), a callable gets ``(index, n, result)`` per fit of the analysis
    (:class:`~laddu_dask.analysis.progress.BinsProgress`).  ``kinds``: as
    :func:`binned_likelihoods`'s.

    Returns
    -------
    list of BinFit
        In bin order; each bin's ``ensemble.message`` names the parameters that start at
        the same value in every restart (no starting range).

    Warns
    -----
    RestartWarning
        Once, when no free parameter has a starting range, so that every bin's restarts
        start at one point (also logged by the ``laddu_dask`` logger).
    """
    options = check_fit_options(options, method)
    built = binned_likelihoods(model, data=data, accepted_mc=accepted_mc, by=by, bins=bins,
                               execution=execution, extended=extended, kinds=kinds)
    seeds = replica_seeds(seed, len(built))
    good = [(i, lik) for i, (_, lik) in enumerate(built) if not isinstance(lik, Exception)]
    starts = {i: [start_vector(lik, s) for s in restart_starts(lik, restarts, initial, seeds[i])]
              for i, lik in good}
    notes = {i: start_note(lik, starts[i]) for i, lik in good}
    same = [note for note, repeated in notes.values() if repeated]
    if same:  # once for every bin: they share the model's parameters
        same_start_warning(f"fit_bins: in every bin, {same[0]}")
    shown = BinsProgress(progress, {i: (_label(built[i][0]), len(starts[i])) for i, _ in good},
                         sink=progress_sink([lik for _, lik in good], "fit_bins"))
    with shared_parent_loads(shared_load_limit(execution)):  # each source partition read once for all bins
        fitted = _fit_every_bin(good, starts, notes, method, shown, options)
    out = []
    for i, (b, lik) in enumerate(built):
        label = _label(b)
        if isinstance(lik, Exception):
            names = list(model.parameter_names) if hasattr(model, "parameter_names") else []
            ensemble = FitEnsemble([failed_fit(names, [float("nan")] * len(names), method, lik)],
                                   parameter_names=names, label=label)
            out.append(BinFit(b.index, b.low, b.high, None, ensemble))
            continue
        ensemble = fitted[i]
        ensemble.label = label
        out.append(BinFit(b.index, b.low, b.high, lik, ensemble))
    return out


def _label(b: Any) -> str:
    return f"bin {b.index} [{b.low:g}, {b.high:g}]"


def _fit_every_bin(good: list, starts: dict, notes: dict, method: Any, shown: BinsProgress,
                   options: dict[str, Any]) -> dict[int, FitEnsemble]:
    """Every good bin's restarts: as tasks on a cluster, else bin by bin in lockstep."""
    fitted: dict[int, FitEnsemble] = {}
    if good and all(runs_as_tasks(lik) for _, lik in good):  # every bin's task at once
        flat = [(i, lik, s) for i, lik in good for s in starts[i]]
        results = iter(fit_as_tasks([lik for _, lik, _ in flat], [s for _, _, s in flat], method=method,
                                    label="bins", failures=FIT_FAILURES,
                                    note=lambda k, r: shown(flat[k][0], k - shown.first[flat[k][0]], r),
                                    **options))
        for i, lik in good:
            fitted[i] = FitEnsemble([next(results) for _ in starts[i]], parameter_names=lik.parameter_names,
                                    starts=starts[i], message=notes[i][0])
    for i, lik in good:
        if i not in fitted:
            fitted[i] = fit_each([lik] * len(starts[i]), starts[i], method=method, label="restarts",
                                 progress=shown.note(i), message=notes[i][0], **options)
    return fitted
