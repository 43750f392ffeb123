"""Printed parameter-only programs at K points, run as Numba machine code once compiled and
as their tier-0 twin until then (:mod:`laddu_dask.compile.point_code`).

A :class:`PointProgram` is shared by everything of the same structure in the process
(:func:`point_program`: the bins of a binned analysis, the replicas of a bootstrap), so its
functions compile once. The first :data:`COMPILE_AFTER` calls run the twin and the
compilation starts then, on a background thread (registered with
:func:`~laddu_dask.runtime.compilations.wait_compilations`): a likelihood evaluated a
few times never pays for it. Both give the same bits, so which one ran never shows in a
result.

Examples
--------
>>> import numpy as np
>>> import laddu_dask as ld
>>> from laddu_dask.compile.normalization import decompose
>>> from laddu_dask.compile.point_code import pack, point_sources
>>> x = ld.scalar("x")
>>> c = ld.complex(ld.parameter("re"), ld.parameter("im"))
>>> program = point_program(point_sources(decompose(ld.CompiledModel.from_expr((c * x).norm_sqr()).split)))
>>> values = np.empty(1)
>>> program.run("value_points", np.array([[1.0], [2.0]]), pack([np.array([[3.0 + 0j]])]), values)
>>> values.tolist()  # |1 + 2i|^2 * 3
[15.0]
"""

from __future__ import annotations

import logging
import threading
from typing import Any

import numpy as np

from laddu_dask.compile.point_code import PointSources, tier0_functions
from laddu_dask.runtime.compilations import numba_available, start_compilation

__all__ = ["COMPILE_AFTER", "PointProgram", "point_program"]

logger = logging.getLogger(__name__)

#: Calls of a program's tier-0 twin before its Numba functions are compiled.
COMPILE_AFTER = 8


class PointProgram:
    """The functions of one :class:`~laddu_dask.compile.point_code.PointSources`: Numba's once
    compiled, the tier-0 twin's until then (see the module)."""

    def __init__(self, sources: PointSources) -> None:
        self.sources = sources
        self.tier0 = tier0_functions(sources)
        self.calls = 0
        self._ready: dict[str, bool] = dict.fromkeys(sources.dims, False)
        self._module: Any = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def _signature(self, name: str) -> tuple:
        from numba import types

        return tuple(types.Array(types.float64, nd, "C") for nd in self.sources.dims[name])

    def _function(self, name: str) -> Any:
        if self._module is None:
            from laddu_dask.compile.kernel_cache import load_module

            self._module = load_module(self.sources.numba)
        return getattr(self._module, name)

    def compile(self) -> None:
        """Compile (or load from Numba's disk cache) every function now."""
        for name in self.sources.dims:
            fn = self._function(name)
            sig = self._signature(name)
            if sig not in fn.overloads:
                fn.compile(sig)
            self._ready[name] = True

    def _compile_quietly(self) -> None:
        try:
            self.compile()
        except Exception as exc:  # noqa: BLE001 - the tier-0 twin goes on (the same bits), no retry
            logger.debug("laddu-dask: a point program did not compile (%r); its tier-0 twin serves", exc)

    def run(self, name: str, *arrays: np.ndarray) -> None:
        """Call function ``name`` on ``arrays`` (float64, C-contiguous, the outputs last)."""
        if not self._ready[name]:
            self.calls += 1
            if self.calls >= COMPILE_AFTER and self._thread is None:
                with self._lock:
                    if self._thread is None:
                        self._thread = start_compilation(threading.Thread(
                            target=self._compile_quietly, daemon=True, name="laddu-dask-compile-points"))
            if not self._ready[name]:
                from laddu_dask.compile.tier0_prelude import Tier0Fallback

                try:
                    self.tier0[name](*arrays)
                    return
                except Tier0Fallback:  # what only Numba computes (it would raise): compile now
                    self.compile()
        self._function(name)(*arrays)


_PROGRAMS: dict[str, PointProgram] = {}
_PROGRAMS_LOCK = threading.Lock()


def point_program(sources: PointSources | None) -> PointProgram | None:
    """The process's :class:`PointProgram` of ``sources``, or ``None`` when there are none
    or Numba is missing (the caller's NumPy code serves then, always)."""
    if sources is None or not numba_available():
        return None
    with _PROGRAMS_LOCK:
        program = _PROGRAMS.get(sources.numba)
        if program is None:
            program = _PROGRAMS[sources.numba] = PointProgram(sources)
    return program
