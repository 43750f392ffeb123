"""Compile a fused kernel in a separate process, into Numba's disk cache.

Numba compiles in Python, holding the interpreter lock; done on a thread of the process
that also prepares the datasets, the two take turns on one core.  :func:`start` runs the
compilation in a child process instead (this module run with ``python -m``), which writes
the machine code into the private kernel cache; the parent then loads it from there
(:meth:`~laddu_dask.compile.fused.FusedKernels.compile_ahead`).  The machine code is
what an in-process compilation makes (the same source, compiler and flags), so only
the timing changes.

The child runs no file it was not told to: it is given the kernel module's path and the
SHA-256 of the source the parent generated, reads the file (never through a symlink),
refuses it unless its bytes have that digest, and loads it through
:func:`~laddu_dask.compile.kernel_cache.load_module`, which checks the folder is private.

Examples
--------
>>> from laddu_dask.compile.precompile import command
>>> cmd = command("/k/laddu_dask_kernel_x.py", "ab" * 32, "f64", ("real", "complex"), True)
>>> cmd[1:3], cmd[-3:]
(['-m', 'laddu_dask.compile.precompile'], ['f64', 'rc', 'gradient'])
"""

from __future__ import annotations

import atexit
import hashlib
import os
import subprocess
import sys
import weakref
from typing import Any

__all__ = ["command", "main", "start"]

_RUNNING: weakref.WeakSet = weakref.WeakSet()


def _stop_running() -> None:  # a child still compiling when the parent exits is not needed
    for proc in list(_RUNNING):
        if proc.poll() is None:
            proc.kill()


atexit.register(_stop_running)


def command(path: str, digest: str, precision: str, cache_kinds: tuple[str, ...],
            with_gradient: bool) -> list[str]:
    """The child's command line."""
    kinds = "".join("c" if k == "complex" else "r" for k in cache_kinds) or "-"
    return [sys.executable, "-m", "laddu_dask.compile.precompile", path, digest, precision, kinds,
            "gradient" if with_gradient else "value"]


def _child_environment(folder: str) -> dict[str, str]:
    """This process's environment, with the kernel folder and the Numba cache folder this
    process uses (Numba reads ``NUMBA_CACHE_DIR`` once, at its import), so that the child
    writes the machine code where this process looks for it."""
    from numba.core import config

    env = {**os.environ, "LADDU_DASK_CACHE": folder}
    env.pop("NUMBA_CACHE_DIR", None)
    if config.CACHE_DIR:
        env["NUMBA_CACHE_DIR"] = config.CACHE_DIR
    return env


def start(kernels: Any, with_gradient: bool) -> subprocess.Popen | None:
    """Start compiling ``kernels``' blocked sum in a child process; ``None`` where no child
    can be started (no Python executable, no module file)."""
    path = kernels.module_file
    if not path or not sys.executable:
        return None
    digest = hashlib.sha256(kernels.module_source.encode()).hexdigest()
    env = _child_environment(os.path.dirname(path))
    try:
        proc = subprocess.Popen(command(path, digest, kernels.precision, kernels.cache_kinds, with_gradient),
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, env=env)
    except OSError:
        return None
    _RUNNING.add(proc)
    return proc


def main(argv: list[str] | None = None) -> int:
    """The child: verify the kernel file, compile its blocked sum into the disk cache."""
    from laddu_dask.compile import fused
    from laddu_dask.compile.kernel_cache import load_module

    path, digest, precision, kinds, which = argv if argv is not None else sys.argv[1:]
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    with os.fdopen(fd, "rb") as f:
        data = f.read()
    if hashlib.sha256(data).hexdigest() != digest:
        return 2  # not the source the parent generated: run nothing
    fused.prelude()
    mod = load_module(data.decode())
    if os.path.abspath(mod.__file__) != os.path.abspath(path):
        return 2
    cache_kinds = tuple("complex" if k == "c" else "real" for k in kinds.strip("-"))
    kernels = fused.FusedKernels(mod.value_sum, mod.gradient_sum, mod.value_terms, mod.gradient_terms,
                                 mod.values, None, 0, "", cache_kinds, precision)
    kernels.compile_ahead(which == "gradient")
    return 0


if __name__ == "__main__":
    sys.exit(main())
