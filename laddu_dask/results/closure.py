"""Input-output (closure) studies: pseudo-data drawn at known parameters, fitted, pulls.

``closure_study(model, truth, source=, accepted_mc=, n_events=, n_replicas=, seed=)`` draws
``n_replicas`` pseudo-data samples from ``model`` at ``truth``
(:mod:`laddu_dask.results.pseudo_data`: accept-reject of a given sample, or the
:class:`~laddu_dask.Generator` when ``source`` is a channel), builds each replica's
likelihood (``NLL``, or ``ExtendedNLL`` with ``extended=True``) against ``accepted_mc``, and
fits every replica with MIGRAD and HESSE from the truth (or ``initial``).  The fits run
as Dask work, one task per replica (:mod:`laddu_dask.analysis.tasks`): on Dask's threaded
scheduler locally, on the cluster with ``Execution(client=...)``.  Replica ``k`` draws from
its own stream ``SeedSequence(seed, spawn_key=(k,))``, and each fit's sums are exact, so a
seed gives the same replicas and fits, bitwise, whatever the number of workers.

The :class:`ClosureResult` holds every replica's fit, its fitted values and errors and
the pulls ``(fit - truth) / error`` of the valid ones; a fit that is not valid (or whose
error is not positive) is counted in ``failed`` with its reason and left out of the
pulls.  ``summary()`` gives each parameter's pull mean and width (``ddof=1``) with their
statistical errors (``width / sqrt(n)`` and ``width / sqrt(2 (n - 1))``) and a
Kolmogorov-Smirnov p-value against a unit Gaussian; ``agrees(n_sigma)`` says whether the
mean is within ``n_sigma`` errors of 0 and the width within ``n_sigma`` of 1.

Every replica is normalized with the same ``accepted_mc``, so that sample's own statistical
fluctuation moves all replicas together: a pull mean off 0 by several of its errors can be
the accepted MC's, not the fit's.  Keep it much larger than a replica (100 times or more:
the KsKs test with 20 times saw a 4 sigma d_mass offset that 200 times removed).

Examples
--------
>>> import numpy as np
>>> import laddu_dask as ld
>>> s = ld.scalar("s")
>>> model = ld.Model(1.0 + ld.parameter("a", initial=0.0, bounds=(-0.99, 0.99)) * s)
>>> signs = np.tile([1.0, -1.0], 4000)
>>> pool = ld.Dataset.from_arrays(scalars={"s": signs})
>>> mc = ld.Dataset.from_arrays(scalars={"s": signs[:2000]})
>>> study = ld.closure_study(model, {"a": 0.3}, source=pool, accepted_mc=mc, n_events=400,
...                          n_replicas=8, seed=1)
>>> study.pulls.shape, study.failed
((8, 1), [])
>>> list(study.summary()["a"])[:5]
['truth', 'mean_fit', 'mean_error', 'pull_mean', 'pull_mean_error']
"""

from __future__ import annotations

import json
import math
import warnings
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from laddu_dask.analysis.ensembles import FitEnsemble, failed_fit
from laddu_dask.analysis.progress import Progress
from laddu_dask.analysis.restarts import FIT_FAILURES, fit_each
from laddu_dask.analysis.tasks import fit_as_local_tasks
from laddu_dask.compile.layout import resolve_parameters
from laddu_dask.data.dataset import Dataset
from laddu_dask.errors import ClosureError, ParameterError
from laddu_dask.expr.model import Model
from laddu_dask.files import read_json, write_json
from laddu_dask.likelihood.events import evaluate_model
from laddu_dask.likelihood.fit import FitResult, check_fit_options
from laddu_dask.likelihood.fit_messages import require_free
from laddu_dask.likelihood.likelihood import Likelihood
from laddu_dask.likelihood.terms import NLL, ExtendedNLL
from laddu_dask.options import FitMethod
from laddu_dask.results.pseudo_data import GeneratorSource, PoolSource, event_count, replica_stream
from laddu_dask.runtime.execution import Execution
from laddu_dask.sums import exact_sum
from laddu_dask.validate import integer
from laddu_dask.views import format_bounds

__all__ = ["ClosureResult", "closure_study"]

_KIND = "laddu_dask.ClosureResult"
#: The keywords of :meth:`~laddu_dask.Likelihood.fit` a study passes on.
_FIT_OPTIONS = ("strategy", "tolerance", "max_calls")


class ClosureResult:
    """The outcome of :func:`closure_study` (see the module).

    Attributes
    ----------
    parameter_names : list of str
    truth : dict[str, float]
        The parameters the pseudo-data were drawn at.
    fits : FitEnsemble
        Every replica's fit, in replica order (a replica whose fit raised is recorded with
        ``valid=False`` and the error in its message).
    events : numpy.ndarray
        The events of each replica.
    settings : dict
        What the study was asked: ``n_events`` (the mean count), ``n_replicas``, ``seed``,
        ``extended``, ``poisson``, ``source`` (``"pool"`` or ``"generator"``), ``method``.
    """

    def __init__(self, parameter_names: list[str], truth: Mapping[str, float], fits: FitEnsemble,
                 events: Any, settings: Mapping[str, Any]) -> None:
        self.parameter_names = list(parameter_names)
        self.truth = {n: float(truth[n]) for n in self.parameter_names}
        self.fits = fits
        self.events = np.asarray(events, dtype=np.int64)
        self.settings = dict(settings)
        reasons = []
        for i, fit in enumerate(fits):
            errors = [fit.errors[n] for n in self.parameter_names]
            if not fit.valid:
                reasons.append((i, fit.message))
            elif not all(math.isfinite(e) and e > 0.0 for e in errors):
                reasons.append((i, f"valid minimum, but not every HESSE error is positive: {errors}"))
        #: ``(replica, reason)`` of every replica left out of the pulls.
        self.failed: list[tuple[int, str]] = reasons
        bad = {i for i, _ in reasons}
        #: The replicas in the pulls, in order.
        self.valid_indices = np.array([i for i in range(len(fits)) if i not in bad], dtype=np.int64)
        rows = [fits[int(i)] for i in self.valid_indices]
        shape = (len(rows), len(self.parameter_names))
        #: Fitted values and HESSE errors of the valid replicas, ``(n_valid, n_parameters)``.
        self.values = np.array([[r.named_parameters[n] for n in self.parameter_names] for r in rows],
                               dtype=np.float64).reshape(shape)
        self.errors = np.array([[r.errors[n] for n in self.parameter_names] for r in rows],
                               dtype=np.float64).reshape(shape)
        truth_row = np.array([self.truth[n] for n in self.parameter_names], dtype=np.float64)
        #: ``(fit - truth) / error`` of the valid replicas, ``(n_valid, n_parameters)``.
        self.pulls = (self.values - truth_row) / self.errors

    @property
    def n_replicas(self) -> int:
        """How many replicas were drawn and fitted."""
        return len(self.fits)

    def summary(self) -> dict[str, dict[str, float]]:
        """Per parameter: ``truth``, ``mean_fit``, ``mean_error`` (the mean HESSE error),
        ``pull_mean`` +- ``pull_mean_error``, ``pull_width`` +- ``pull_width_error`` and
        ``ks_pvalue`` (Kolmogorov-Smirnov test of the pulls against N(0, 1)).

        Raises
        ------
        ClosureError
            When fewer than two replicas were fitted validly (the reasons are in the message).
        """
        n = len(self.valid_indices)
        if n < 2:
            reasons = "; ".join(f"replica {i}: {why}" for i, why in self.failed[:3])
            raise ClosureError(f"only {n} of {self.n_replicas} replicas were fitted validly; pull statistics "
                               f"need at least two ({reasons})")
        out = {}
        for j, name in enumerate(self.parameter_names):
            pulls = self.pulls[:, j]
            width = float(np.std(pulls, ddof=1))
            out[name] = {
                "truth": self.truth[name],
                "mean_fit": float(np.mean(self.values[:, j])),
                "mean_error": float(np.mean(self.errors[:, j])),
                "pull_mean": float(np.mean(pulls)),
                "pull_mean_error": width / math.sqrt(n),
                "pull_width": width,
                "pull_width_error": width / math.sqrt(2.0 * (n - 1)),
                "ks_pvalue": _ks_pvalue(pulls),
            }
        return out

    def agrees(self, n_sigma: float = 3.0) -> dict[str, bool]:
        """Whether each parameter's pull mean is within ``n_sigma`` errors of 0 and its width
        within ``n_sigma`` errors of 1."""
        return {name: abs(s["pull_mean"]) <= n_sigma * s["pull_mean_error"]
                and abs(s["pull_width"] - 1.0) <= n_sigma * s["pull_width_error"]
                for name, s in self.summary().items()}

    def table(self) -> str:
        """The summary as aligned text, one row per parameter."""
        head = (f"{'parameter':>14s} {'truth':>11s} {'mean fit':>11s} {'mean error':>10s} "
                f"{'pull mean':>17s} {'pull width':>17s} {'KS p':>6s}")
        lines = [head]
        for name, s in self.summary().items():
            lines.append(f"{name:>14s} {s['truth']:11.5g} {s['mean_fit']:11.5g} {s['mean_error']:10.3g} "
                         f"{s['pull_mean']:+8.3f} +- {s['pull_mean_error']:5.3f} "
                         f"{s['pull_width']:8.3f} +- {s['pull_width_error']:5.3f} {s['ks_pvalue']:6.3f}")
        return "\n".join(lines)

    def plot(self, parameters: list[str] | None = None, *, bins: int = 15, columns: int = 4) -> Any:
        """Histograms of the pulls, one panel per parameter, with the unit Gaussian the
        pulls should follow and the pull mean and width; a matplotlib ``Figure``.

        Raises
        ------
        ParameterError
            For a name that is not a parameter of the study.
        ClosureError
            When fewer than two replicas were fitted validly.
        """
        import matplotlib.pyplot as plt

        names = self.parameter_names if parameters is None else list(parameters)
        unknown = [n for n in names if n not in self.parameter_names]
        if unknown:
            raise ParameterError(f"not parameters of the closure study: {', '.join(map(repr, unknown))}; "
                                 f"they are {', '.join(self.parameter_names)}")
        summary = self.summary()
        rows = -(-len(names) // columns)
        fig, axes = plt.subplots(rows, min(columns, len(names)), figsize=(3.2 * min(columns, len(names)),
                                 2.6 * rows), squeeze=False, layout="constrained")
        edges = np.linspace(-4.0, 4.0, bins + 1)
        grid = np.linspace(-4.0, 4.0, 201)
        scale = len(self.valid_indices) * (edges[1] - edges[0])
        for ax, name in zip(axes.flat, names):
            s = summary[name]
            counts, _, _ = ax.hist(np.clip(self.pulls[:, self.parameter_names.index(name)], -4.0, 4.0),
                                   bins=edges, histtype="step", color="k")
            ax.set_ylim(0.0, 1.45 * max(float(counts.max()), scale / math.sqrt(2.0 * math.pi)))
            ax.plot(grid, scale * np.exp(-0.5 * grid**2) / math.sqrt(2.0 * math.pi), color="tab:blue")
            ax.set_title(name, fontsize="medium")
            ax.set_xlabel("pull")
            ax.text(0.03, 0.97, f"mean {s['pull_mean']:+.2f} $\\pm$ {s['pull_mean_error']:.2f}\n"
                    f"width {s['pull_width']:.2f} $\\pm$ {s['pull_width_error']:.2f}",
                    transform=ax.transAxes, va="top", fontsize="small")
        for ax in list(axes.flat)[len(names):]:
            ax.set_visible(False)
        return fig

    def __repr__(self) -> str:
        head = (f"ClosureResult({self.n_replicas} replicas of {self.settings.get('n_events', '?'):g} events"
                f"{' (Poisson)' if self.settings.get('poisson') else ''}, "
                f"{len(self.valid_indices)} valid, {len(self.failed)} failed)")
        if len(self.valid_indices) < 2:
            return head
        return head + "\n" + self.table()

    # -- results that last -----------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form: the truth, the settings, the events, every fit and the summary
        (``None`` when fewer than two replicas are valid)."""
        summary = self.summary() if len(self.valid_indices) >= 2 else None
        return {"kind": _KIND, "parameter_names": self.parameter_names, "truth": self.truth,
                "settings": self.settings, "events": self.events.tolist(), "failed": self.failed,
                "summary": summary, "fits": self.fits.to_dict()}

    def to_json(self, path: Any = None) -> str:
        """The :meth:`to_dict` form as JSON text; with ``path``, also written there (atomically,
        with provenance; :meth:`load` reads it)."""
        if path is not None:
            write_json(path, self.to_dict())
        return json.dumps(self.to_dict())

    save = to_json

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ClosureResult:
        """The result :meth:`to_dict` described."""
        return cls(d["parameter_names"], d["truth"], FitEnsemble.from_dict(d["fits"]), d["events"],
                   d["settings"])

    @classmethod
    def load(cls, path: Any) -> ClosureResult:
        """The result :meth:`to_json` wrote to ``path``."""
        return cls.from_dict(read_json(path, _KIND))


def _count(value: Any, what: str, minimum: int) -> int:
    return integer(value, what, minimum=minimum)


def _within_bounds(model: Model, values: dict[str, float], what: str) -> dict[str, float]:
    for name, v in values.items():
        lo, hi = model.parameters[name].bounds
        if (lo is not None and v < lo) or (hi is not None and v > hi):
            raise ParameterError(f"{what} of {name!r} ({v}) lies outside its bounds {format_bounds(lo, hi)}")
    return values


def _truth(model: Model, truth: Any) -> dict[str, float]:
    """``truth`` as a full mapping of the free parameters, inside their bounds."""
    require_free(model)  # before any replica is drawn
    names = model.parameter_names
    if not isinstance(truth, Mapping) and isinstance(truth, (str, bytes)) or truth is None:
        raise ParameterError(f"truth must be a mapping or sequence of the free parameters, got {truth!r}")
    return _within_bounds(model, dict(zip(names, resolve_parameters(names, truth), strict=True)), "truth")


def _mean_events(n_events: Any, extended: bool, model: Model, truth: dict[str, float], accepted_mc: Dataset,
                 execution: Execution | None) -> float:
    if n_events is None:
        if not extended:
            raise ParameterError("n_events is needed (only an extended closure takes the expected yield "
                                 "sum_accmc w I(truth) by default)")
        intensity = np.asarray(evaluate_model(model, accepted_mc, truth, execution, True, False))
        mean = exact_sum(accepted_mc.weights() * intensity)
        if not (math.isfinite(mean) and mean > 0.0):
            raise ParameterError(f"the expected yield sum_accmc w I(truth) is {mean}; give n_events")
        return mean
    if isinstance(n_events, bool) or not isinstance(n_events, (int, float, np.integer, np.floating)):
        raise ParameterError(f"n_events must be a positive number, got {n_events!r}")
    if not (math.isfinite(float(n_events)) and n_events > 0):
        raise ParameterError(f"n_events must be positive and finite, got {n_events!r}")
    return float(n_events)


def closure_study(model: Model, truth: Any, *, source: Any, accepted_mc: Dataset,
                  n_events: float | None = None, n_replicas: int = 50, seed: int = 0,
                  extended: bool = False, poisson: bool | None = None,
                  initial: Any = None, method: str = "migrad", execution: Execution | None = None,
                  progress: bool | Callable = False, generator_options: Mapping[str, Any] | None = None,
                  **fit_options: Any) -> ClosureResult:
    """Draw ``n_replicas`` pseudo-data samples from ``model`` at ``truth``, fit each, and
    return the pulls (see the module).

    Parameters
    ----------
    model : Model
        The intensity the pseudo-data are drawn from and fitted with.
    truth : mapping or sequence
        Every free parameter's true value (by name, or in ``model.parameter_names`` order).
    source : Dataset, Channel or Generator
        A sample to accept-reject (accepted MC, or generated phase space; split among the
        replicas, which share no event), or a channel whose :class:`~laddu_dask.Generator`
        draws each replica (``generator_options`` go to its ``unweighted``).
    accepted_mc : Dataset
        The normalization sample of every replica's likelihood.
    n_events : float, optional
        Events per replica (the Poisson mean with ``poisson``); for an extended study the
        default is the expected yield ``sum_accmc w I(truth)``.
    n_replicas : int, default 50
        At least 2.
    seed : int, default 0
        Replica ``k`` draws from ``SeedSequence(seed, spawn_key=(k,))``.
    extended : bool, default False
        Fit ``ExtendedNLL`` instead of ``NLL``.
    poisson : bool, optional
        Poisson-fluctuate each replica's count (default: ``extended``).
    initial : mapping or sequence, optional
        Every fit's start (a mapping may name some parameters, the others start at the truth);
        default: the truth.
    method, **fit_options
        As in :meth:`~laddu_dask.Likelihood.fit` (``strategy``, ``tolerance``, ``max_calls``).
    execution : Execution, optional
        Where the pool's intensity, the generator and the fits run (``client=``: a cluster).
    progress : bool or callable
        As in :meth:`~laddu_dask.Likelihood.fit_restarts`.

    Returns
    -------
    ClosureResult

    Raises
    ------
    ParameterError
        For a bad model, truth (unknown or missing names, outside the bounds), count, seed,
        source or execution.
    DataError
        When the source is too small for the replicas (named, with the size it needs).
    """
    if not isinstance(model, Model):
        raise ParameterError(f"model must be a laddu_dask Model, got {type(model).__name__}")
    n_replicas = _count(n_replicas, "n_replicas", 2)
    seed = _count(seed, "seed", 0)
    if not isinstance(accepted_mc, Dataset):
        raise ParameterError(f"accepted_mc must be a Dataset, got {type(accepted_mc).__name__}")
    if execution is not None and not isinstance(execution, Execution):
        raise ParameterError(f"execution must be a laddu_dask Execution, got {type(execution).__name__}")
    unknown = sorted(set(fit_options) - set(_FIT_OPTIONS))
    if unknown:
        raise ParameterError(f"closure_study got unknown keyword(s) {', '.join(map(repr, unknown))}; the fit "
                             f"options are {', '.join(_FIT_OPTIONS)}")
    fit_options = check_fit_options(fit_options, method)
    try:
        method = FitMethod.check(method, "method")
    except ValueError as exc:
        raise ParameterError(str(exc)) from None
    values = _truth(model, truth)
    names = model.parameter_names
    start = dict(values) if initial is None else _within_bounds(model, dict(
        zip(names, resolve_parameters(names, initial, defaults=values), strict=True)), "initial value")
    if source is accepted_mc:
        warnings.warn("closure_study: the pseudo-data are drawn from accepted_mc itself, so every replica "
                      "shares events with its normalization sample; give an independent source",
                      stacklevel=2)
    mean = _mean_events(n_events, bool(extended), model, values, accepted_mc, execution)
    poisson = bool(extended) if poisson is None else bool(poisson)
    if not poisson and mean != int(mean):
        raise ParameterError(f"n_events must be a whole number without poisson=True, got {n_events!r}")
    if isinstance(source, Dataset):
        if generator_options:
            raise ParameterError("generator_options apply to a Channel or Generator source, not a Dataset")
        drawer: Any = PoolSource(source, model, values, n_replicas=n_replicas, seed=seed, execution=execution)
        kind = "pool"
    else:
        from laddu_dask.expr.topology import Channel
        from laddu_dask.generation.generator import Generator

        if not isinstance(source, (Channel, Generator)):
            raise ParameterError(f"source must be a Dataset, a Channel or a Generator, got "
                                 f"{type(source).__name__}")
        drawer = GeneratorSource(source, model, values, execution=execution, **dict(generator_options or {}))
        kind = "generator"
    replicas, events = [], []
    for k in range(n_replicas):  # drawn here, before any fit: a too small source fails first
        rng = replica_stream(seed, (k,))
        n = event_count(rng, mean, poisson)
        replicas.append(drawer.draw(k, n, rng))
        events.append(n)
    term = ExtendedNLL if extended else NLL
    built: list[Likelihood | Exception] = []
    for data in replicas:
        try:
            built.append(Likelihood([term(model, data=data, accepted_mc=accepted_mc, name="closure")],
                                    execution=execution))
        except FIT_FAILURES as exc:  # e.g. a replica of no events: recorded, the others go on
            built.append(exc)
    fits = _fit_replicas(built, model.parameter_names, start, method=method, progress=progress, **fit_options)
    settings = {"n_events": mean, "n_replicas": n_replicas, "seed": seed, "extended": bool(extended),
                "poisson": poisson, "source": kind, "method": method}
    return ClosureResult(model.parameter_names, values, fits, events, settings)


def _fit_replicas(built: list[Likelihood | Exception], names: list[str], start: dict[str, float], *,
                  method: str, progress: bool | Callable, **options: Any) -> FitEnsemble:
    """One task per replica: Dask's threaded scheduler locally, the cluster's with a client."""
    good = [i for i, lik in enumerate(built) if not isinstance(lik, Exception)]
    x0 = [start[n] for n in names]
    results: list[FitResult | None] = [None] * len(built)
    for i, lik in enumerate(built):
        if isinstance(lik, Exception):
            results[i] = failed_fit(names, x0, method, lik)
    likelihoods = [built[i] for i in good]
    if likelihoods:
        execution = likelihoods[0].execution
        if execution.client is None and execution.device == "cpu":
            done = fit_as_local_tasks(likelihoods, [x0] * len(good), method=method, label="closure",
                                      failures=FIT_FAILURES, num_workers=execution.num_workers,
                                      note=Progress(progress, "closure", len(good)), **options)
        else:  # a cluster: tasks next to small data (fit_each decides), else fits one by one
            done = list(fit_each(likelihoods, [x0] * len(good), method=method, label="closure",
                                 progress=progress, **options))
        for i, result in zip(good, done, strict=True):
            results[i] = result
    return FitEnsemble(results, parameter_names=names, starts=[x0] * len(built), label="closure")


def _ks_pvalue(pulls: np.ndarray) -> float:
    """Kolmogorov-Smirnov p-value of ``pulls`` against N(0, 1) (scipy.stats is imported here:
    it costs about a second, which ``import laddu_dask`` does not pay)."""
    import scipy.stats

    return float(scipy.stats.kstest(pulls, "norm").pvalue)
