"""What a minimizer or sampler reports while and after it runs: the status message, the
evaluation counts, and the snapshot an observer callable is given (laddu's ``StatusMessage``,
``EvalCounts``, ``StatusSnapshot``).

Examples
--------
>>> from laddu_dask.likelihood.ganesh.status import StatusMessage
>>> m = StatusMessage(True, "converged: gradient norm below 1e-06")
>>> m.success, str(m)
(True, 'Success: converged: gradient norm below 1e-06')
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class StatusMessage:
    """Whether a run succeeded, and why it stopped (``text``; ``None`` when it gave none).

    ``str`` is laddu's: ``"Success: TEXT"`` for a success, ``"Message: TEXT"`` otherwise,
    ``"Step"`` when a run stopped (by a Python terminator) without a text."""

    success: bool
    text: str | None = None

    def __str__(self) -> str:
        if self.text is None:
            return "Step"
        return f"{'Success' if self.success else 'Message'}: {self.text}"


@dataclass(frozen=True)
class EvalCounts:
    """Evaluations a run used: of the function (``f``), its gradient (``g``) and its
    Hessian (``h``). A value-and-gradient evaluation counts once in each of ``f`` and ``g``."""

    f: int = 0
    g: int = 0
    h: int = 0


@dataclass(frozen=True)
class StatusSnapshot:
    """What an observer callable is given at each step: the step number, whether the run
    has succeeded so far, and its status text."""

    step: int
    success: bool
    message: str
