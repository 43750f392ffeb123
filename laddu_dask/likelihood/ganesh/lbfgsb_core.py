"""SciPy's L-BFGS-B routine driven step by step (reverse communication).

``scipy.optimize.minimize(method="L-BFGS-B")`` loops over one routine of SciPy's,
``setulb``, which returns whenever it needs the objective at a point or has made an
iteration.  :func:`lbfgsb_iterations` runs that loop as steps
(:mod:`laddu_dask.likelihood.steps`), so a fit yields its points instead of evaluating them
and many fits can share their evaluation rounds; the iterates are bitwise SciPy's own
(``tests/analysis/test_lockstep.py`` compares them with ``scipy.optimize.minimize``).

The routine is loaded from SciPy's extension module without importing the rest of
``scipy.optimize`` (about 0.4 s of imports a process would otherwise pay at its first fit);
when that fails, it comes from the package as usual.

Examples
--------
>>> callable(_setulb())
True
"""

from __future__ import annotations

import functools
import glob
import importlib.machinery
import importlib.util
import os
from typing import Any

import numpy as np

from laddu_dask.likelihood.ganesh.status import StatusMessage
from laddu_dask.likelihood.steps import Steps

__all__ = ["LBFGSB_STOPPED", "lbfgsb_iterations"]

#: How the text of an L-BFGS-B run that SciPy ended itself begins (SciPy's message follows).
LBFGSB_STOPPED = "L-BFGS-B stopped: "


@functools.cache
def _setulb() -> Any:
    """SciPy's ``setulb`` (``scipy.optimize._lbfgsb``), loaded on its own when possible."""
    import scipy

    name = "scipy.optimize._lbfgsb"
    try:
        path = glob.glob(os.path.join(scipy.__path__[0], "optimize", "_lbfgsb.*"))
        path = [p for p in path if p.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES))][0]
        loader = importlib.machinery.ExtensionFileLoader(name, path)
        spec = importlib.util.spec_from_file_location(name, path, loader=loader)
        module = importlib.util.module_from_spec(spec)
        loader.exec_module(module)
        return module.setulb
    except Exception:  # noqa: BLE001 - another layout of SciPy: the usual import
        from scipy.optimize import _lbfgsb

        return _lbfgsb.setulb


def lbfgsb_iterations(problem: Any, run: Any, y0: np.ndarray, config: Any, bounds: tuple) -> Steps:
    """SciPy's L-BFGS-B as steps (:mod:`laddu_dask.likelihood.steps`): its reverse-communication
    routine (``setulb``, what ``scipy.optimize.minimize(method="L-BFGS-B")`` loops over),
    yielding each point it asks for; one step (``run.after_step``) per iteration.

    SciPy's own stopping tests are off (zero ``factr`` and ``pgtol``, no iteration limit):
    the terminators decide.  A point asked for again (a line search returning to it) is not
    evaluated again.  Returns ``(y, f, message)``.
    """
    lo, hi = bounds
    if problem.transform is not None:  # the bounds in the config transform's coordinates
        with np.errstate(all="ignore"):
            ends = np.sort(np.stack([problem.internal(lo), problem.internal(hi)]), axis=0)
        lo, hi = np.where(np.isnan(ends[0]), -np.inf, ends[0]), np.where(np.isnan(ends[1]), np.inf, ends[1])
    lo, hi = np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64)
    n, m = len(y0), int(config.history_size)
    low, high = np.isfinite(lo), np.isfinite(hi)
    nbd = np.where(low & high, 2, np.where(low, 1, np.where(high, 3, 0))).astype(np.int32)
    x = np.clip(np.array(y0, dtype=np.float64), lo, hi)
    low_bnd, upper_bnd = np.where(low, lo, 0.0), np.where(high, hi, 0.0)
    wa = np.zeros(2 * m * n + 5 * n + 11 * m * m + 8 * m, np.float64)
    iwa = np.zeros(3 * n, np.int32)
    task, ln_task = np.zeros(2, np.int32), np.zeros(2, np.int32)
    lsave, isave, dsave = np.zeros(4, np.int32), np.zeros(44, np.int32), np.zeros(29, np.float64)
    memory: dict[bytes, tuple[float, np.ndarray]] = {}

    def asked(y: np.ndarray) -> Any:  # a value and gradient, from memory when asked before
        key = y.tobytes()
        if key not in memory:
            if len(memory) > 64:
                memory.clear()
            values, grads = yield problem.ask(y)[None, :]
            memory[key] = problem.answer(y, values[0], grads[0])
        return memory[key]

    f, g = np.array(0.0), np.zeros(n, np.float64)  # setulb starts by asking for x
    while True:
        _setulb()(m, x, low_bnd, upper_bnd, nbd, f, g, 0.0, 0.0, wa, iwa, task, lsave, isave, dsave,
                       _MAX_LINE_SEARCH, ln_task)
        if task[0] == _FG:
            f, g = yield from asked(x.copy())
        elif task[0] == _NEW_X:
            if run.after_step(x.copy(), f, gradient=g, bounds=(lo, hi)):
                return x.copy(), f, run.message
        else:
            break
    text = f"{LBFGSB_STOPPED}{_STATUS[int(task[0])]}: {_TASKS.get(int(task[1]), '')}"
    return x.copy(), float(f), run.message or StatusMessage(False, text)


#: ``setulb``'s task codes (SciPy's ``_lbfgsb_py``): evaluate at ``x``; a new iterate.
_FG, _NEW_X = 3, 1
#: SciPy's default longest line search.
_MAX_LINE_SEARCH = 20
#: SciPy's words for ``setulb``'s status and task codes, for the message of a run it ended.
_STATUS = {4: "CONVERGENCE", 5: "STOP", 6: "WARNING", 7: "ERROR", 8: "ABNORMAL"}
_TASKS = {401: "NORM OF PROJECTED GRADIENT <= PGTOL", 402: "RELATIVE REDUCTION OF F <= FACTR*EPSMCH",
          601: "ROUNDING ERRORS PREVENT PROGRESS", 602: "STP = STPMAX", 603: "STP = STPMIN",
          604: "XTOL TEST SATISFIED", 701: "NO FEASIBLE SOLUTION"}


