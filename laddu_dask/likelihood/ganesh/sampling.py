"""The run of an ensemble sampler as laddu runs it: step, observe, check the terminators,
keep what the chain storage says, and summarise.

:func:`run_ensemble` runs laddu's AIES on emcee (``vectorize=True``: each half-ensemble
proposal is one call of the vectorised log-density) or the ensemble slice sampler of
:mod:`~laddu_dask.likelihood.ganesh.ess`, on any vectorised log-density ``X (K, n) ->
(K,)``. Steps are counted from 0 as laddu's callbacks count them: after the first step an
observer or terminator sees step 0, and ``MaxSteps(n)`` stops after ``n`` steps.

Examples
--------
>>> import numpy as np
>>> from laddu_dask.likelihood.ganesh.mcmc_configs import AIESInit
>>> log_p = lambda x: -0.5 * np.sum(x * x, axis=1)
>>> walkers = np.random.default_rng(0).normal(size=(8, 2))
>>> s = run_ensemble(log_p, AIESInit(walkers), None, seed=1, terminators=[lambda step, snap: step >= 4])
>>> s.dimension, s.evals.f, s.message.text
((8, 6, 2), 48, 'Terminated by terminators[0] after step 4')
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from laddu_dask.errors import ParameterError
from laddu_dask.likelihood.ganesh.autocorrelation import AutocorrelationTerminator
from laddu_dask.likelihood.ganesh.ess import EnsembleSlice
from laddu_dask.likelihood.ganesh.mcmc_configs import AIESConfig, AIESInit, ESSConfig, ESSInit
from laddu_dask.likelihood.ganesh.mcmc_summary import MCMCSummary
from laddu_dask.likelihood.ganesh.status import EvalCounts, StatusMessage, StatusSnapshot


def check_config(init: Any, config: Any) -> AIESConfig | ESSConfig:
    """The config to run ``init`` with: ``config``, or the default of the sampler ``init`` picks.

    Raises
    ------
    TypeError
        ``init`` is not an ``AIESInit`` or ``ESSInit``, or ``config`` is not its match.
    """
    kinds = {AIESInit: AIESConfig, ESSInit: ESSConfig}
    if type(init) not in kinds:
        raise TypeError(f"init must be a ganesh.AIESInit or ganesh.ESSInit (it picks the sampler), "
                        f"got {type(init).__name__}")
    want = kinds[type(init)]
    if config is None:
        return want()
    if not isinstance(config, want):
        raise TypeError(f"config must be a ganesh.{want.__name__} for a {type(init).__name__}, "
                        f"got {type(config).__name__}")
    return config


def _max_steps(terminator: Any) -> int | None:
    """The step limit of a ``MaxSteps``-like terminator (an integer ``steps``), else None."""
    steps = getattr(terminator, "steps", None)
    return int(steps) if isinstance(steps, int | np.integer) and not isinstance(steps, bool) else None


def _check_callbacks(terminators: Sequence[Any], observers: Sequence[Any]) -> None:
    for i, t in enumerate(terminators):
        if not (_max_steps(t) is not None or isinstance(t, AutocorrelationTerminator) or callable(t)):
            raise TypeError(f"terminators[{i}] must be a ganesh terminator (MaxSteps, "
                            f"AutocorrelationTerminator) or a callable (step, snapshot) -> bool, "
                            f"got {type(t).__name__}")
    for i, o in enumerate(observers):
        if not (hasattr(o, "interval") or type(o).__name__ == "DebugObserver" or callable(o)):
            raise TypeError(f"observers[{i}] must be a ganesh observer (ProgressObserver, DebugObserver) "
                            f"or a callable (step, snapshot), got {type(o).__name__}")
    if not any(_max_steps(t) is not None or callable(t)
               or (isinstance(t, AutocorrelationTerminator) and t.terminate) for t in terminators):
        raise ParameterError("terminators: sample needs a terminator that ends the run, such as "
                             "terminators=[ld.ganesh.MaxSteps(1000)] (laddu 0.28.1 samples without end)")


def _observe(observers: Sequence[Any], step: int, snapshot: StatusSnapshot, evals: int, walkers: int) -> None:
    for o in observers:
        interval = getattr(o, "interval", None)
        if interval is not None:
            if step % max(int(interval), 1) == 0:
                print(f"step={step} status=Step: {snapshot.message} walkers={walkers} density_evals={evals}",
                      flush=True)
        elif type(o).__name__ == "DebugObserver":
            print(f"Step: {step}\n{snapshot}", flush=True)
        else:
            o(step, snapshot)


def _terminate(terminators: Sequence[Any], step: int, snapshot: StatusSnapshot,
               chain: Callable[[], np.ndarray]) -> StatusMessage | None:
    """The message of the first terminator that stops the run after ``step``, else None."""
    for i, t in enumerate(terminators):
        limit = _max_steps(t)
        if limit is not None:
            if step >= limit - 1:
                return StatusMessage(True, f"Maximum number of steps reached ({limit})")
        elif isinstance(t, AutocorrelationTerminator):
            if t.check(step, chain):
                return StatusMessage(True, f"Converged: integrated autocorrelation time {t.taus[-1]:.6g} "
                                           f"steps, stable and below 1/{t.n_taus_threshold} of the "
                                           f"{step} steps")
        else:
            verdict = t(step, snapshot)
            if not isinstance(verdict, bool | np.bool_):
                raise TypeError(f"terminators[{i}] must return a bool, got {type(verdict).__name__}")
            if verdict:
                return StatusMessage(True, f"Terminated by terminators[{i}] after step {step}")
    return None


def _counting(log_prob: Callable[[np.ndarray], np.ndarray], counter: list[int]):
    def counted(points: np.ndarray) -> np.ndarray:
        counter[0] += len(points)
        counter[1] += 1
        return log_prob(points)
    return counted


def _aies_steps(log_prob, walkers: np.ndarray, log_p: np.ndarray, config: AIESConfig, seed: int):
    """emcee's sampler over the weighted moves: ``(walkers, log_p, moved, move name)`` per step."""
    import emcee  # here, not at import: emcee imports scipy.stats (seconds at a cold start)

    moves = [(emcee.moves.StretchMove(a=m.scale) if m.kind == "stretch" else emcee.moves.WalkMove(), m.weight)
             for m in config.moves]
    kinds = {m.kind for m in config.moves if m.weight > 0}
    name = f"{kinds.pop().capitalize()} Move" if len(kinds) == 1 else "Stretch/Walk Move"
    sampler = emcee.EnsembleSampler(len(walkers), walkers.shape[1], log_prob, moves=moves, vectorize=True)
    sampler.random_state = np.random.RandomState(seed).get_state()
    before = walkers.copy()
    for state in sampler.sample(emcee.State(walkers.copy(), log_prob=log_p.copy()), iterations=None,
                                store=False, skip_initial_state_check=True):
        moved = np.any(state.coords != before, axis=1)  # emcee updates its state in place
        before = state.coords.copy()
        yield before, state.log_prob.copy(), moved, name


def _ess_steps(log_prob, walkers: np.ndarray, log_p: np.ndarray, config: ESSConfig, seed: int):
    sampler = EnsembleSlice(log_prob, config, np.random.default_rng(seed))
    step = 0
    while True:
        walkers, log_p, moved = sampler.step(walkers, log_p, step)
        yield walkers, log_p, moved, f"{sampler.last_move.kind.capitalize()} Move"
        step += 1


def run_ensemble(log_prob: Callable[[np.ndarray], np.ndarray], init: AIESInit | ESSInit,
                 config: Any = None, *, seed: int = 0, terminators: Sequence[Any] = (),
                 observers: Sequence[Any] = (), parameter_names: Sequence[str] | None = None,
                 counter: list[int] | None = None) -> MCMCSummary:
    """Sample ``exp(log_prob)`` from ``init``'s walkers until a terminator stops the run.

    Parameters
    ----------
    log_prob : callable
        Vectorised: ``(K, n)`` points to ``(K,)`` log-densities (``-inf`` where zero).
    init : AIESInit or ESSInit
        The starting walkers; picks the sampler.
    config : AIESConfig or ESSConfig, optional
        The match of ``init`` (default: its defaults).
    seed : int
        Seeds the sampler: the same seed, the same chain.
    terminators, observers : sequence
        laddu's callbacks (``MaxSteps``, ``AutocorrelationTerminator``, ``ProgressObserver``,
        ``DebugObserver``) or callables ``(step, snapshot)``, a terminator's returning a bool.
    parameter_names : sequence of str, optional
        The summary's names.
    counter : list of two ints, optional
        ``[points queried, evaluation rounds]`` that ``log_prob`` itself keeps; by default
        every point and every call is counted here.

    Returns
    -------
    MCMCSummary

    Raises
    ------
    ParameterError
        No terminator ends the run, or a starting walker has a zero density (named).
    TypeError
        A mismatched config, an unknown callback, a terminator that returns no bool.
    """
    config = check_config(init, config)
    if isinstance(config, ESSConfig) and len(init.walkers) < 4:
        raise ParameterError(f"init: the ensemble slice sampler needs at least 4 walkers (two in each half "
                             f"of the ensemble), got {len(init.walkers)}")
    terminators, observers = list(terminators), list(observers)
    _check_callbacks(terminators, observers)
    for t in terminators:
        if isinstance(t, AutocorrelationTerminator):
            t.reset()
    if counter is None:
        counter = [0, 0]
        log_prob = _counting(log_prob, counter)
    walkers = np.array(init.walkers, dtype=np.float64)
    log_p = np.asarray(log_prob(walkers), dtype=np.float64)
    if not np.all(np.isfinite(log_p)):
        k = int(np.argmin(np.isfinite(log_p)))
        raise ParameterError(f"init: starting walker {k} ({walkers[k].tolist()}) has log-density "
                             f"{log_p[k]!r} (outside the parameter bounds, or a zero likelihood); "
                             "start where it is finite")
    storage = config.chain_storage
    chain, dens, kept = (deque([x], maxlen=storage.limit) for x in (walkers, log_p, 0))
    moves = np.zeros(len(walkers))
    run = _aies_steps if isinstance(config, AIESConfig) else _ess_steps
    steps = run(log_prob, walkers, log_p, config, seed)
    step, message = 0, None
    for step, (walkers, log_p, moved, name) in enumerate(steps):
        moves += moved
        if storage.keeps(step + 1):
            chain.append(np.array(walkers))
            dens.append(np.array(log_p))
            kept.append(step + 1)
        snapshot = StatusSnapshot(step, False, name)
        _observe(observers, step, snapshot, counter[0], len(walkers))
        message = _terminate(terminators, step, snapshot, lambda: np.stack(chain, axis=1))
        if message is not None:
            break
    return MCMCSummary(chain=np.stack(chain, axis=1), evals=EvalCounts(f=counter[0]), message=message,
                       parameter_names=None if parameter_names is None else list(parameter_names),
                       log_density=np.stack(dens, axis=1), acceptance_fraction=moves / (step + 1),
                       rounds=counter[1], steps=step + 1, kept_steps=np.array(kept, dtype=np.int64))
