"""What a fit says: MIGRAD's and HESSE's problems in plain words, Minuit's own messages,
and the refusal of every fit entry point when nothing is free (:func:`require_free`).

Minuit's messages (``E VariableMetricBuilder Initial matrix not pos.def.``) are not printed
into the user's output: iminuit prints them with ``pybind11::print``, a
``sys.stdout.write`` from the thread that runs MIGRAD or HESSE (``Minuit.print_level``
chooses which messages are printed, not where; iminuit has no hook for them).  While
fits run, :func:`minuit_output` puts a router in place of ``sys.stdout``: a write from a
thread whose fit is inside Minuit is kept for that fit; every other write (other threads,
the fit's own progress line, which runs in :func:`outside_minuit`) goes to the stream that
was there before.  The first fit to start installs the router, the last to end removes it,
so the fits of a lockstep batch (one thread each) each keep their own messages.  They are
logged by the ``laddu_dask`` logger (``E``/``W`` as warnings, ``I``/``D`` as debug), and its
errors and warnings end the fit's message
(``"...; Minuit: E VariableMetricBuilder Initial matrix not pos.def."``).

Examples
--------
>>> with minuit_output() as said:
...     print("W Example a message from Minuit")
>>> said
['W Example a message from Minuit']
"""

from __future__ import annotations

import contextlib
import logging
import sys
import threading
from collections.abc import Iterator
from typing import Any

from laddu_dask.errors import ParameterError

__all__ = ["covariance_problems", "fit_message", "migrad_problems", "minuit_output", "nothing_free_message",
           "outside_minuit", "require_free"]

logger = logging.getLogger("laddu_dask")

_here = threading.local()  # .kept: this thread's list of Minuit's writes, or None
_lock = threading.Lock()
_users = 0
_router: _Router | None = None


class _Router:
    """``sys.stdout`` while fits run: a write from a thread inside Minuit is kept for its fit."""

    def __init__(self, target: Any) -> None:
        self.target = target

    def write(self, text: str) -> int:
        kept = getattr(_here, "kept", None)
        if kept is None:  # (no stream at all, as under pythonw: print drops the text)
            return len(text) if self.target is None else self.target.write(text)
        kept.append(text)
        return len(text)

    def __getattr__(self, name: str) -> Any:  # flush, isatty, encoding, fileno, ...
        return getattr(self.target, name)


@contextlib.contextmanager
def minuit_output() -> Iterator[list[str]]:
    """Keep what Minuit prints in this thread; yields the list of its lines, filled (and
    logged) when the block ends."""
    global _users, _router
    with _lock:
        if _users == 0:
            _router = _Router(sys.stdout)
            sys.stdout = _router
        _users += 1
    outer = getattr(_here, "kept", None)
    kept: list[str] = []
    lines: list[str] = []
    _here.kept = kept
    try:
        yield lines
    finally:
        _here.kept = outer
        with _lock:
            _users -= 1
            if _users == 0:
                if sys.stdout is _router:  # else someone replaced it since: theirs stays
                    sys.stdout = _router.target
                _router = None
        lines += [line.strip() for line in "".join(kept).splitlines() if line.strip()]
        for line in lines:
            logger.log(logging.DEBUG if _chatter(line) else logging.WARNING, "Minuit: %s", line)


def _chatter(line: str) -> bool:
    """Whether a line of Minuit's is information or debugging (``I``, ``D``: printed only
    at a ``print_level`` above 0) rather than an error or a warning."""
    return line[:2] in ("I ", "D ")


@contextlib.contextmanager
def outside_minuit() -> Iterator[None]:
    """Python that Minuit calls (the likelihood, a progress line) prints as it would."""
    kept = getattr(_here, "kept", None)
    _here.kept = None
    try:
        yield
    finally:
        _here.kept = kept


def migrad_problems(fmin: Any) -> list[str]:
    """What kept MIGRAD's minimum from being valid, in plain words."""
    problems = []
    if fmin.has_reached_call_limit:
        problems.append("call limit reached")
    if fmin.is_above_max_edm:
        problems.append("above EDM goal")
    if not fmin.is_valid and not problems:
        problems.append("MIGRAD did not converge")
    return problems


def covariance_problems(fmin: Any) -> list[str]:
    """What is wrong with HESSE's covariance, in plain words."""
    if fmin is None:
        return ["HESSE did not run"]
    if fmin.hesse_failed:
        return ["HESSE failed"]
    if fmin.has_made_posdef_covar:
        return ["covariance forced positive-definite"]
    if not fmin.has_covariance:
        return ["no covariance"]
    if not fmin.has_accurate_covar:
        return ["covariance not accurate"]
    return []


def fit_message(problems: list[str], fmin: Any, note: str = "", minuit_said: list[str] = ()) -> str:
    """``"valid minimum; EDM 1.2e-05 < goal 0.0002"`` or ``"invalid minimum: " + problems``,
    then ``note`` and Minuit's errors and warnings, each once (``"Minuit: E ..."``; its
    information and debugging lines are only logged)."""
    parts = ["valid minimum" if not problems else "invalid minimum: " + ", ".join(problems)]
    if fmin is not None:
        edm, goal = float(fmin.edm), float(fmin.edm_goal)
        if edm < goal:
            parts.append(f"EDM {edm:.2g} < goal {goal:.2g}")
        else:  # MIGRAD accepts up to 10 times the goal
            where = "above" if fmin.is_above_max_edm else "within"
            parts.append(f"EDM {edm:.2g} {where} 10 x goal {goal:.2g}")
        if fmin.has_parameters_at_limit:
            parts.append("some parameters at a limit")
    if note:
        parts.append(note)
    parts += [f"Minuit: {line}" for line in dict.fromkeys(minuit_said) if not _chatter(line)]
    return "; ".join(parts)


def require_free(likelihood: Any) -> None:
    """The check of every fit entry point (fits, restarts, bins, bootstrap, MCMC, closure
    studies, the batch job): ``likelihood`` (or a model) has a free parameter.

    Raises
    ------
    ParameterError
        When every parameter is fixed, naming them: there is nothing to fit.
    """
    if len(likelihood.parameter_names):
        return
    raise ParameterError(nothing_free_message(getattr(likelihood, "fixed_parameters", {})))


def nothing_free_message(fixed: dict[str, float]) -> str:
    """``"nothing to fit: every parameter is fixed (a = 1.0, b = 2.0); ..."``, with the remedy."""
    if not fixed:
        return "nothing to fit: the likelihood has no parameters"
    held = ", ".join(f"{n} = {v!r}" for n, v in fixed.items())
    return (f"nothing to fit: every parameter is fixed ({held}); free one with "
            "model.with_parameters({name: ld.ParameterUpdate(fixed=None)})")
