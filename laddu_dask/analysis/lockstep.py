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
    likelihood : Likelihood
        With ``values_and_gradients(points)``.
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
    names = list(likelihood.parameter_names)
    out: list[Any] = [None] * len(starts)
    fits = [default_fit_steps(likelihood, s, max_calls=max_calls,
                              use_parameter_metadata=use_parameter_metadata) for s in starts]
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
            for i, reply in _round(likelihood, asked):
                steps = fits[i]
                if isinstance(reply, Exception):
                    advance(i, lambda s=steps, e=reply: s.throw(e))
                else:
                    advance(i, lambda s=steps, r=reply: s.send(r))
    finally:
        for steps in fits:
            steps.close()
    return out


def _round(likelihood: Any, asked: dict[int, np.ndarray]) -> list[tuple[int, Any]]:
    """Every fit's points evaluated in one call; when that fails, each fit's points alone, so
    that only the fits whose own points fail hear of it."""
    ids = list(asked)
    sizes = [len(asked[i]) for i in ids]
    try:
        values, grads = likelihood.values_and_gradients(np.concatenate([asked[i] for i in ids]))
    except Exception:  # noqa: BLE001 - one bad point: each fit's points alone, as it would see them
        replies: list[tuple[int, Any]] = []
        for i in ids:
            try:
                replies.append((i, likelihood.values_and_gradients(asked[i])))
            except Exception as exc:  # noqa: BLE001 - that fit hears of it
                replies.append((i, exc))
        return replies
    ends = np.cumsum(sizes)
    return [(i, (values[end - size:end], grads[end - size:end])) for i, end, size in zip(ids, ends, sizes)]

