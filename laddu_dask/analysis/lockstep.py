"""laddu's default fit from many starts at once, as steps that share evaluation rounds.

Each fit is :func:`~laddu_dask.likelihood.fit.default_fit_steps` (L-BFGS-B, then the
Hessian of exact gradients), a generator that yields the points it needs instead of
evaluating them.  :func:`fit_lockstep` advances every fit to its next request, evaluates
all the requested points in one :meth:`~laddu_dask.Likelihood.values_and_gradients` call
(one pass of the thread pool, or one call per worker on a cluster), and sends each fit its
rows: no thread per fit and no lock, so a round costs one evaluation call plus each fit's
own arithmetic.  Each row is bitwise what the fit would get alone, so every fit follows
exactly the path it follows by itself, and the results are bitwise those of
``likelihood.fit(initial=start)``.

Examples
--------
>>> import numpy as np
>>> import laddu_dask as ld
>>> x = ld.scalar("x")
>>> model = ld.Model(ld.parameter("slope", initial=(0.2, 3.0), bounds=(0.0, 8.0)) * x + 0.5)
>>> data = ld.Dataset.from_arrays(scalars={"x": np.random.default_rng(5).triangular(0, 1, 1, 300)})
>>> lik = ld.Likelihood([ld.NLL(model, data=data, accepted_mc=ld.Dataset.from_arrays(
...     scalars={"x": np.linspace(0.0, 1.0, 2000)}))])
>>> starts = [lik.resolve(s) for s in lik.sample_parameters(seed=1, n=3)]
>>> together = fit_lockstep(lik, starts)
>>> [r.fval for r in together] == [lik.fit(initial=s).fval for s in starts]
True
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from laddu_dask.analysis.ensembles import failed_fit
from laddu_dask.likelihood.fit import FitResult, default_fit_steps
from laddu_dask.likelihood.likelihood import evaluate_together

__all__ = ["LOCKSTEP_OPTIONS", "fit_lockstep"]

#: The options of :meth:`~laddu_dask.Likelihood.fit` that a lockstep fit takes; any other
#: (MIGRAD's, a ganesh config, terminators, observers) runs the fits in threads instead.
LOCKSTEP_OPTIONS = frozenset({"max_calls", "use_parameter_metadata", "seed"})


def fit_lockstep(likelihood: Any, starts: Sequence[Any], *, max_calls: int | None = None,
                 use_parameter_metadata: bool = True, seed: int = 0,
                 failures: tuple[type[BaseException], ...] = (),
                 note: Callable[[int, FitResult], None] | None = None) -> list[FitResult]:
    """laddu's default fit of ``likelihood`` from every start, in shared rounds.

    Parameters
    ----------
    likelihood : Likelihood or sequence of Likelihood
        With ``values_and_gradients(points)``; or one likelihood per start (bootstrap
        replicas of one dataset), whose rounds run together where they share an execution
        (:func:`~laddu_dask.likelihood.likelihood.evaluate_together`).
    starts : sequence of sequence of float
        One start per fit, in parameter order.
    max_calls, use_parameter_metadata
        As in :meth:`~laddu_dask.Likelihood.fit`, for every fit (``seed`` is accepted and
        changes nothing: L-BFGS-B draws no random numbers).
    failures : tuple of exception types
        A fit that raises one of them (a bad start, a point where the likelihood is not
        finite) is recorded as failed (:func:`~laddu_dask.analysis.ensembles.failed_fit`);
        the others go on.  Any other exception stops every fit and is raised.
    note : callable, optional
        ``note(i, result)`` as fit ``i`` ends.
    """
    likelihoods = (list(likelihood) if isinstance(likelihood, Sequence)
                   else [likelihood] * len(starts))
    if len(likelihoods) != len(starts):
        raise ValueError(f"fit_lockstep: {len(likelihoods)} likelihoods for {len(starts)} starts; "
                         "give one likelihood, or one per start")
    names = list(likelihoods[0].parameter_names) if likelihoods else []
    out: list[Any] = [None] * len(starts)
    fits = [default_fit_steps(lik, s, max_calls=max_calls, use_parameter_metadata=use_parameter_metadata)
            for lik, s in zip(likelihoods, starts, strict=True)]
    pending: dict[int, np.ndarray] = {}

    def advance(i: int, move: Callable[[], np.ndarray]) -> None:
        try:
            pending[i] = move()
            return
        except StopIteration as stop:
            out[i] = stop.value
        except failures as exc:
            out[i] = failed_fit(names, starts[i], None, exc)
        if note is not None:
            note(i, out[i])

    try:
        for i, steps in enumerate(fits):
            advance(i, steps.__next__)
        while pending:
            asked, pending = pending, {}
            for i, reply in _round(likelihoods, asked):
                steps = fits[i]
                if isinstance(reply, Exception):
                    advance(i, lambda s=steps, e=reply: s.throw(e))
                else:
                    advance(i, lambda s=steps, r=reply: s.send(r))
    finally:
        for steps in fits:
            steps.close()
    return out


def _round(likelihoods: list[Any], asked: dict[int, np.ndarray]) -> list[tuple[int, Any]]:
    """Every fit's points evaluated in one round; when that fails, each fit's points alone, so
    that only the fits whose own points fail hear of it."""
    ids = list(asked)
    try:
        replies = _together(likelihoods, asked, ids)
    except Exception:  # noqa: BLE001 - one bad point: each fit's points alone, as it would see them
        replies = []
        for i in ids:
            try:
                replies.append((i, likelihoods[i].values_and_gradients(asked[i])))
            except Exception as exc:  # noqa: BLE001 - that fit hears of it
                replies.append((i, exc))
    return replies


def _together(likelihoods: list[Any], asked: dict[int, np.ndarray], ids: list[int]) -> list[tuple[int, Any]]:
    """The points of ``ids`` in one call: the fits of one likelihood as one block of its
    points, those of several likelihoods through ``evaluate_together``."""
    first = likelihoods[ids[0]]
    if all(likelihoods[i] is first for i in ids):
        sizes = [len(asked[i]) for i in ids]
        values, grads = first.values_and_gradients(np.concatenate([asked[i] for i in ids]))
        ends = np.cumsum(sizes)
        return [(i, (values[end - size:end], grads[end - size:end]))
                for i, end, size in zip(ids, ends, sizes)]
    out = evaluate_together([(likelihoods[i], likelihoods[i]._resolve_points(asked[i])) for i in ids],
                            True)
    return [(i, (np.array([v for v, _ in rows]), np.array([g for _, g in rows]).reshape(len(rows), -1)))
            for i, rows in zip(ids, out, strict=True)]
