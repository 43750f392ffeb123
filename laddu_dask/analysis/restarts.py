"""Many fits of one likelihood: restarts from sampled starts, and bootstrap refits.

``fit_restarts(likelihood, n, seed=)`` is laddu's ``Likelihood.fit_restarts``: the first
fit starts from ``initial`` when given, the others from
:meth:`~laddu_dask.Likelihood.sample_parameters`.  ``bootstrap_fit(likelihood, n, seed=)``
is laddu's ``Likelihood.bootstrap_fit``: each replica Poisson-reweights the observed data
of every term (:meth:`~laddu_dask.Dataset.bootstrap`, lazily), shares the accepted MC's
preparation with the original likelihood, and is fitted from the original's best values.
``fit_restarts`` returns a :class:`~laddu_dask.analysis.FitEnsemble`, ``bootstrap_fit``
laddu's :class:`~laddu_dask.Ensemble` (its ``fits`` one); a fit that raises is recorded
and the others go on.  The restarts of one likelihood run in lockstep, their evaluations
merged into rounds of one :meth:`~laddu_dask.Likelihood.values_and_gradients` call each
(:mod:`laddu_dask.analysis.batching`: every partition read once a round, each fit's path
bitwise its own), locally on the thread pool and on a cluster in one call per worker.  On
a cluster, fits whose data are small run instead as tasks, each on one worker next to its
data (:mod:`laddu_dask.analysis.tasks`).  Bootstrap replicas are different likelihoods
and run one after another (or as tasks).

Examples
--------
>>> import numpy as np
>>> import laddu_dask as ld
>>> x = ld.scalar("x")
>>> model = ld.Model(ld.parameter("a", initial=(0.5, 5.0), bounds=(0.0, 10.0)) * x * x + 1.0)
>>> rng = np.random.default_rng(1)
>>> data = ld.Dataset.from_arrays(scalars={"x": rng.uniform(0, 1, 500) ** 0.5})
>>> mc = ld.Dataset.from_arrays(scalars={"x": rng.uniform(0, 1, 5000)})
>>> lik = ld.Likelihood([ld.NLL(model, data=data, accepted_mc=mc)])
>>> fits = lik.fit_restarts(3, seed=2)
>>> len(fits), len(fits.valid), round(fits.best.fval - min(f.fval for f in fits), 12)
(3, 3, 0.0)
"""

from __future__ import annotations

import inspect
import logging
import os
import sys
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from laddu_dask.analysis.batching import fit_batched, fit_together, lockstep_applies
from laddu_dask.analysis.ensembles import FitEnsemble, failed_fit
from laddu_dask.analysis.progress import Progress
from laddu_dask.analysis.replicas import replica_likelihoods, replica_seeds, shared_load_limit
from laddu_dask.analysis.tasks import fit_as_tasks, fit_replicas_as_tasks, runs_as_tasks
from laddu_dask.data.shared_loads import shared_parent_loads
from laddu_dask.errors import (
    DataError,
    NonFiniteError,
    NonPositiveIntensityError,
    NormalizationError,
    ParameterError,
    RestartWarning,
)
from laddu_dask.likelihood.ensemble import Ensemble
from laddu_dask.likelihood.fit import check_fit_options
from laddu_dask.likelihood.fit import fit as likelihood_fit  # its default method is bootstrap_fit's
from laddu_dask.likelihood.fit_messages import require_free
from laddu_dask.likelihood.likelihood import Likelihood

__all__ = ["FIT_FAILURES", "bootstrap_fit", "fit_each", "fit_restarts",
           "restart_starts", "same_start_warning", "start_note", "start_vector"]

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep  # laddu_dask/

#: The errors that end one fit of many, recorded in its result (the others go on).
FIT_FAILURES = (NonFiniteError, NonPositiveIntensityError, NormalizationError, ParameterError, DataError,
                FloatingPointError)


def fit_each(likelihoods: list[Any], starts: list[Any], *, method: str | None, label: str,
             progress: bool | Callable = False, batch: bool = True, message: str = "",
             **options: Any) -> FitEnsemble:
    """Fit ``likelihoods[i]`` from ``starts[i]`` for every ``i``; a fit that raises one of
    :data:`FIT_FAILURES` is recorded as failed and the others go on (``message``: the
    ensemble's, see :func:`start_note`).  Fits of one
    likelihood run in lockstep with their evaluations merged (``batch``,
    :mod:`laddu_dask.analysis.batching`); on a cluster, fits whose data are small run as
    tasks next to their data (:mod:`laddu_dask.analysis.tasks`)."""
    options = check_fit_options(options, method)
    names = likelihoods[0].parameter_names
    if batch and len(likelihoods) > 1 and all(lik is likelihoods[0] for lik in likelihoods) \
            and not runs_as_tasks(likelihoods[0]):
        x0s = [start_vector(likelihoods[0], s) for s in starts]
        results = fit_batched(likelihoods[0], x0s, method=method, failures=FIT_FAILURES,
                              note=Progress(progress, label, len(x0s)), **options)
        return FitEnsemble(results, parameter_names=names, starts=x0s, label=label, message=message)
    shared = all(lik.execution is likelihoods[0].execution for lik in likelihoods)
    if batch and len(likelihoods) > 1 and shared and lockstep_applies(method, options) \
            and not any(runs_as_tasks(lik) for lik in likelihoods):
        # bootstrap replicas: one likelihood each, on one execution, fitted in shared rounds
        x0s = [start_vector(lik, s) for lik, s in zip(likelihoods, starts, strict=True)]
        results = fit_together(likelihoods, x0s, failures=FIT_FAILURES,
                               note=Progress(progress, label, len(x0s)), **options)
        return FitEnsemble(results, parameter_names=names, starts=x0s, label=label, message=message)
    if all(runs_as_tasks(lik) for lik in likelihoods):
        x0s = [start_vector(lik, s) for lik, s in zip(likelihoods, starts, strict=True)]
        results = fit_as_tasks(likelihoods, x0s, method=method, label=label, failures=FIT_FAILURES,
                               note=Progress(progress, label, len(x0s)), **options)
        return FitEnsemble(results, parameter_names=names, starts=x0s, label=label, message=message)
    results, resolved = [], []
    note = Progress(progress, label, len(starts))
    for i, (lik, start) in enumerate(zip(likelihoods, starts, strict=True)):
        x0 = start_vector(lik, start)
        try:
            result = lik.fit(initial=x0, method=method, **options)
        except FIT_FAILURES as exc:
            result = failed_fit(lik.parameter_names, x0, method, exc)
        results.append(result)
        resolved.append(x0)
        note(i, result)
    return FitEnsemble(results, parameter_names=names, starts=resolved, label=label, message=message)


def start_vector(likelihood: Any, start: Any) -> list[float]:
    """``start`` (None: the defaults; a mapping may name some parameters) as a full vector;
    the start of every fit of many, so a likelihood without free parameters stops here."""
    require_free(likelihood)
    return [float(v) for v in likelihood.resolve({} if start is None else start)]


def fit_restarts(likelihood: Likelihood, restarts: int, initial: Any = None, *, config: Any = None,
                 seed: int = 0, terminators: Sequence[Any] = (), observers: Sequence[Any] = (),
                 default_callbacks: bool = True, use_parameter_metadata: bool = True,
                 method: str | None = None, progress: bool | Callable = False, **options: Any) -> FitEnsemble:
    """``restarts`` independent fits of ``likelihood`` (laddu's ``fit_restarts``).

    Parameters
    ----------
    likelihood : Likelihood
    restarts : int
        Number of fits.
    initial : sequence or mapping, optional
        The first fit's start; the others' come from ``sample_parameters(seed=seed)``.
    config, terminators, observers, default_callbacks, use_parameter_metadata
        laddu's, as in :meth:`~laddu_dask.Likelihood.fit`, for every fit.
    seed : int
        Seed of the sampled starts (the same seed gives the same fits) and of a randomized
        ganesh method.
    method, **options
        As in :meth:`~laddu_dask.Likelihood.fit` (None: laddu's L-BFGS-B; ``"migrad"``,
        ``strategy``, ``tolerance``, ``max_calls``).
    progress : bool or callable
        ``True`` keeps one line (in a notebook, one display) up to date: fits done, valid,
        best -2 ln L; a callable gets ``(index, n, result)`` as each fit ends.

    Returns
    -------
    FitEnsemble
        A ``list`` of :class:`~laddu_dask.likelihood.FitResult`, in start order (laddu's
        ``list[FitResult]``); ``.best`` is the valid one of lowest ``fval``; its
        ``message`` names the parameters that start at the same value in every restart
        (they have no starting range).

    Warns
    -----
    RestartWarning
        When no free parameter has a starting range, so that the restarts start at one
        point (also logged by the ``laddu_dask`` logger).
    """
    x0s = [start_vector(likelihood, s) for s in restart_starts(likelihood, restarts, initial, seed)]
    note, same = start_note(likelihood, x0s)
    if same:
        same_start_warning(f"fit_restarts: {note}")
    laddus = {"config": config, "terminators": terminators, "observers": observers, "seed": seed,
              "default_callbacks": default_callbacks, "use_parameter_metadata": use_parameter_metadata}
    laddus = {k: v for k, v in laddus.items() if v != _FIT_DEFAULTS[k]}  # only what changes a fit
    return fit_each([likelihood] * len(x0s), x0s, method=method, label="restarts", progress=progress,
                    message=note, **laddus, **options)


#: The defaults of laddu's keywords of :meth:`~laddu_dask.Likelihood.fit`.
_FIT_DEFAULTS = {"config": None, "terminators": (), "observers": (), "seed": 0, "default_callbacks": True,
                 "use_parameter_metadata": True}


def restart_starts(likelihood: Likelihood, restarts: int, initial: Any, seed: int) -> list[Any]:
    """The starts of :func:`fit_restarts`: ``initial`` first when given, then sampled ones."""
    if isinstance(restarts, bool) or not isinstance(restarts, int | np.integer) or restarts < 1:
        raise ValueError(f"restarts must be a positive integer, got {restarts!r}")
    sampled = int(restarts) - (initial is not None)
    starts = [initial] if initial is not None else []
    if sampled:
        starts += likelihood.sample_parameters(seed=seed, n=sampled)
    return starts


def start_note(likelihood: Likelihood, x0s: Sequence[Sequence[float]]) -> tuple[str, bool]:
    """What restarts from ``x0s`` say of their starts, and whether they repeat one point.

    ``("", False)`` for one start or when every free parameter has a starting range
    (``initial=(minimum, maximum)``); otherwise the parameters without one, which start at
    their initial values in every sampled restart, and ``True`` when that is all of them and
    some restarts repeat a start.
    """
    specs = likelihood.parameters
    unranged = [n for n, spec in specs.items() if spec.initial_range is None]
    if len(x0s) < 2 or not unranged:
        return "", False
    how = ("give ranges with initial=(minimum, maximum) in ld.parameter or ld.ParameterUpdate "
           "([start] name = [minimum, maximum] in a batch job)")
    points = len({tuple(map(float, x)) for x in x0s})
    if len(unranged) < len(specs) or points == len(x0s):  # the starts still differ
        return (f"{', '.join(unranged)} start at their initial values in every sampled restart "
                f"(no starting range); {how}"), False
    where = "the same point" if points == 1 else f"only {points} distinct points"
    return (f"the {len(x0s)} restarts start at {where}: no free parameter ({', '.join(unranged)}) "
            f"has a starting range, so the sampled starts are their initial values; {how}"), True


def same_start_warning(note: str) -> None:
    """Say ``note`` (restarts at one point) once: a :class:`~laddu_dask.RestartWarning`
    and a warning of the ``laddu_dask`` logger."""
    logging.getLogger("laddu_dask").warning(note)
    frame, level = sys._getframe(1), 2  # the warning points at the first caller outside laddu_dask
    while frame.f_back is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame, level = frame.f_back, level + 1
    warnings.warn(note, RestartWarning, stacklevel=level)


def bootstrap_fit(likelihood: Likelihood, samples: int, initial: Any = None, *, config: Any = None,
                  seed: int = 0, terminators: Sequence[Any] = (), observers: Sequence[Any] = (),
                  default_callbacks: bool = True, use_parameter_metadata: bool = True,
                  method: str | None = None, progress: bool | Callable = False, **options: Any) -> Ensemble:
    """Refit ``samples`` Poisson-bootstrap replicas of the observed data (laddu's ``bootstrap_fit``).

    Replica ``k`` multiplies every data weight of every term by Poisson(1) counts drawn with
    seed ``replica_seeds(seed, samples)[k]``; the accepted MC is the original's, prepared
    once.  Each replica is fitted from ``initial`` (default: the parameters' initial values;
    pass the central fit's ``values`` as laddu's closure example does).

    Parameters
    ----------
    likelihood : Likelihood
    samples : int
        Replicas, at least one.
    initial : sequence or mapping, optional
        The start of every refit.
    config, terminators, observers, default_callbacks, use_parameter_metadata
        laddu's fit settings, passed to every refit's :meth:`~laddu_dask.Likelihood.fit`
        (only those given: the defaults leave ``fit``'s own).
    seed : int
        Seed of the replicas (the same seed, the same replicas).
    method : str, optional
        laddu-dask's method of every refit (``None``: :meth:`~laddu_dask.Likelihood.fit`'s
        own default, as laddu refits with ``fit``).
    progress, **options
        laddu-dask's: as in :func:`fit_restarts`.

    Returns
    -------
    Ensemble
        laddu's ensemble: ``draws`` the values of the valid refits, one row each, in
        :attr:`~laddu_dask.Likelihood.parameter_names` order; ``fits`` every refit (a
        :class:`~laddu_dask.analysis.FitEnsemble`, failed ones recorded, with ``spread()``).

    Raises
    ------
    ValueError
        ``samples`` not a positive integer.
    """
    if isinstance(samples, bool) or not isinstance(samples, int | np.integer) or samples < 1:
        raise ValueError(f"samples must be a positive integer, got {samples!r}")
    given = {"config": config, "terminators": terminators, "observers": observers,
             "default_callbacks": default_callbacks, "use_parameter_metadata": use_parameter_metadata}
    unset = {"config": None, "terminators": (), "observers": (), "default_callbacks": True,
             "use_parameter_metadata": True}
    laddu = {k: v for k, v in given.items() if not _unset(v, unset[k])}
    seeds = replica_seeds(seed, int(samples))
    if method is None:
        method = inspect.signature(likelihood_fit).parameters["method"].default
    if runs_as_tasks(likelihood) and lockstep_applies(method, {**laddu, **options}):
        # on a cluster: the replicas in one task per worker thread, each in lockstep there
        x0 = start_vector(likelihood, initial)
        results = fit_replicas_as_tasks(likelihood, seeds, x0, label="bootstrap", failures=FIT_FAILURES,
                                        note=Progress(progress, "bootstrap", len(seeds)),
                                        **check_fit_options({**laddu, **options}, method))
        fits = FitEnsemble(results, parameter_names=likelihood.parameter_names, starts=[x0] * len(seeds),
                           label="bootstrap")
    else:
        with shared_parent_loads(shared_load_limit(likelihood.execution)):  # the data read once for all
            fits = fit_each(replica_likelihoods(likelihood, seeds), [initial] * len(seeds), method=method,
                            label="bootstrap", progress=progress, **laddu, **options)
    ensemble = Ensemble(fits.draws, fits.parameter_names, fits=fits)
    ensemble.bootstrap_seed = int(seed)
    return ensemble


def _unset(value: Any, default: Any) -> bool:
    """Whether a laddu keyword was left at its default (an empty sequence for ``()``)."""
    if isinstance(default, tuple):
        return not isinstance(value, str) and len(value) == 0
    return value is default
