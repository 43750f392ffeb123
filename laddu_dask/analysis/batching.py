"""Many fits of one likelihood in lockstep: their evaluations merged into rounds.

laddu's default fit (L-BFGS-B, ``method=None``) runs as steps without threads
(:mod:`laddu_dask.analysis.lockstep`); the other methods (MIGRAD, ganesh configurations,
terminators and observers) as below.
:func:`fit_batched` runs each fit in a thread of its own.  When a fit asks for an
evaluation it waits; when every fit still running has asked, the last to ask evaluates all
their points in one :meth:`~laddu_dask.Likelihood.values_and_gradients` call (and one
:meth:`~laddu_dask.Likelihood.values` call for those that want no gradient; a fit's HESSE
brings the ``2 n`` points of its Hessian to the round): one pass of
the thread pool, or one call per worker on a cluster, reading each partition once for all
of them.  Each evaluation is bitwise what the fit would get alone, so every fit follows
exactly the path it follows when run by itself; only the rounds are shared.

Examples
--------
>>> import numpy as np
>>> import laddu_dask as ld
>>> t = ld.scalar("t")
>>> model = ld.Model((ld.parameter("b", initial=(-3.0, -0.5), bounds=(-10.0, 0.0)) * t).exp())
>>> events = ld.Dataset.from_arrays(scalars={"t": np.random.default_rng(4).exponential(0.5, 400)})
>>> mc = ld.Dataset.from_arrays(scalars={"t": np.linspace(0.0, 5.0, 4000)})
>>> lik = ld.Likelihood([ld.NLL(model, data=events, accepted_mc=mc)])
>>> starts = lik.sample_parameters(seed=1, n=3)
>>> together = fit_batched(lik, starts, method=None)  # laddu's L-BFGS-B
>>> [r.fval for r in together] == [lik.fit(initial=s).fval for s in starts]
True
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from laddu_dask.analysis.ensembles import failed_fit
from laddu_dask.analysis.lockstep import LOCKSTEP_OPTIONS, fit_lockstep
from laddu_dask.likelihood.fit import FitResult, fit

__all__ = ["fit_batched"]


class _OneBlasThread:
    """A context in which the BLAS libraries (NumPy's and SciPy's OpenBLAS) use one thread.

    The fits' own linear algebra (L-BFGS-B's, a few parameters) runs in many threads at
    once; a multi-threaded OpenBLAS called from each of them spins and contends for its
    threads (a 20-restart L-BFGS-B batch took 3.2 s instead of 0.6 s on 2 cores). The
    likelihood's kernels do not use BLAS.  Batches that overlap (fits as tasks on a worker's
    threads) share one limit: the first to enter sets it, the last to leave restores it.
    """

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.users = 0
        self.limit: Any = None

    def __enter__(self) -> None:
        with self.lock:
            if self.users == 0:
                from threadpoolctl import threadpool_limits

                self.limit = threadpool_limits(limits=1, user_api="blas")
            self.users += 1

    def __exit__(self, *exc: Any) -> None:
        with self.lock:
            self.users -= 1
            if self.users == 0:
                self.limit.restore_original_limits()
                self.limit = None


_one_blas_thread = _OneBlasThread()


class _Rounds:
    """The meeting point of the fits: their pending points and the evaluations of each round."""

    def __init__(self, likelihood: Any, live: int) -> None:
        self.likelihood = likelihood
        self.live = live
        self.cond = threading.Condition()
        self.pending: dict[int, tuple[np.ndarray, bool]] = {}
        self.results: dict[int, tuple[float, Any] | BaseException] = {}

    def evaluate(self, fit: int, x: np.ndarray, with_gradient: bool) -> tuple[float, Any]:
        """The value (and gradient) at ``x``, from the next round."""
        values, grads = self.evaluate_points(fit, np.array(x, dtype=np.float64)[None, :], with_gradient)
        return float(values[0]), None if grads is None else grads[0]

    def evaluate_points(self, fit: int, points: np.ndarray, with_gradient: bool) -> tuple[np.ndarray, Any]:
        """Values (and gradients) at K points (a Hessian's), from the next round."""
        with self.cond:
            self.pending[fit] = (np.array(points, dtype=np.float64), with_gradient)
            self._maybe_run()
            while fit not in self.results:
                self.cond.wait()
            out = self.results.pop(fit)
        if isinstance(out, BaseException):
            raise out
        return out

    def retire(self) -> None:
        with self.cond:
            self.live -= 1
            self._maybe_run()

    def _maybe_run(self) -> None:
        """Evaluate the round when every live fit waits (called with the lock held)."""
        if not self.pending or len(self.pending) < self.live:
            return
        batch, self.pending = self.pending, {}
        try:
            for want_gradient in (True, False):
                ids = [i for i, (_, g) in batch.items() if g is want_gradient]
                if ids:
                    self._round(ids, [batch[i][0] for i in ids], want_gradient)
        finally:
            self.cond.notify_all()

    def _round(self, ids: list[int], points: list[np.ndarray], want_gradient: bool) -> None:
        lik = self.likelihood
        sizes = [len(p) for p in points]
        ends = np.cumsum(sizes)
        try:
            if want_gradient:
                values, grads = lik.values_and_gradients(np.concatenate(points))
            else:
                values, grads = lik.values(np.concatenate(points)), None
            for i, end, size in zip(ids, ends, sizes, strict=True):
                self.results[i] = (values[end - size:end], None if grads is None else grads[end - size:end])
        except Exception:  # noqa: BLE001 - one bad point: each fit's points alone, as it would see them
            for i, x in zip(ids, points, strict=True):
                try:
                    self.results[i] = (lik.values_and_gradients(x) if want_gradient
                                       else (lik.values(x), None))
                except Exception as exc:  # noqa: BLE001 - that fit hears of it
                    self.results[i] = exc
        except BaseException as exc:  # an interrupt: every waiting fit ends with it
            for i in ids:
                self.results.setdefault(i, exc)
            raise


class _View:
    """The likelihood as one fit sees it: its evaluations go through the rounds."""

    def __init__(self, likelihood: Any, rounds: _Rounds, fit: int) -> None:
        self._likelihood, self._rounds, self._fit = likelihood, rounds, fit

    def __getattr__(self, name: str) -> Any:
        return getattr(self._likelihood, name)

    def value(self, params: Any) -> float:
        return self._rounds.evaluate(self._fit, self._likelihood.resolve(params), False)[0]

    def value_and_gradient(self, params: Any) -> tuple[float, np.ndarray]:
        return self._rounds.evaluate(self._fit, self._likelihood.resolve(params), True)

    def gradient(self, params: Any) -> np.ndarray:
        return self.value_and_gradient(params)[1]

    def values_and_gradients(self, points: Any) -> tuple[np.ndarray, np.ndarray]:
        resolved = np.array([self._likelihood.resolve(p) for p in points], dtype=np.float64)
        return self._rounds.evaluate_points(self._fit, resolved, True)


def lockstep_applies(method: str | None, options: dict[str, Any]) -> bool:
    """Whether fits of ``method`` with ``options`` run as steps in shared rounds
    (:func:`~laddu_dask.analysis.lockstep.fit_lockstep`): laddu's default L-BFGS-B with
    none of the options only a threaded fit takes."""
    return method in (None, "lbfgsb") and set(options) <= LOCKSTEP_OPTIONS


def fit_together(likelihoods: Sequence[Any], starts: Sequence[Sequence[float]], *,
                 failures: tuple[type[BaseException], ...] = (), note: Any = None,
                 **options: Any) -> list[FitResult]:
    """Fit ``likelihoods[i]`` from ``starts[i]``, all in shared rounds (bootstrap replicas of one
    dataset: one likelihood each, on one execution); for :func:`lockstep_applies` options."""
    with _one_blas_thread:
        return fit_lockstep(list(likelihoods), starts, failures=failures, note=note, **options)


def fit_batched(likelihood: Any, starts: Sequence[Sequence[float]], *, method: str | None,
                failures: tuple[type[BaseException], ...] = (), note: Any = None,
                **options: Any) -> list[FitResult]:
    """Fit ``likelihood`` from every start at once, merging the evaluations (see the module).

    A fit that raises one of ``failures`` is recorded as failed
    (:func:`~laddu_dask.analysis.ensembles.failed_fit`); any other exception is raised once
    every fit has ended.  ``note(i, result)`` hears of each fit as it ends.
    """
    if lockstep_applies(method, options):  # as steps, no threads
        with _one_blas_thread:
            return fit_lockstep(likelihood, starts, failures=failures, note=note, **options)
    rounds = _Rounds(likelihood, len(starts))
    out: list[Any] = [None] * len(starts)

    def run(i: int) -> None:
        try:
            out[i] = fit(_View(likelihood, rounds, i), initial=list(starts[i]), method=method, **options)
        except failures as exc:
            out[i] = failed_fit(likelihood.parameter_names, starts[i], method, exc)
        except BaseException as exc:  # noqa: BLE001 - raised below, once every fit has ended
            out[i] = exc
        finally:
            rounds.retire()
        if note is not None and isinstance(out[i], FitResult):
            note(i, out[i])

    threads = [threading.Thread(target=run, args=(i,), name=f"laddu-dask-fit-{i}", daemon=True)
               for i in range(len(starts))]
    with _one_blas_thread:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    for result in out:
        if isinstance(result, BaseException):
            raise result
    return out
