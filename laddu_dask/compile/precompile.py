"""Compile a fused kernel in a child process, so that the parent keeps its interpreter.

Numba's compiler is mostly Python: compiling a kernel on a thread of the process that
evaluates holds the interpreter lock for seconds, and every NumPy call of the tier-0
evaluations running meanwhile waits for it (measured: a tier-0 first evaluation of the
KsKs model took 5.1 s beside the compiling thread, 1.2 s without it).  So the runtime
compiles in a child Python process instead (:func:`compile_in_child`): the parent sends it
the kernel module's source on standard input (the child runs that source, never a file
it finds), the child loads the module into the same cache folder and compiles the
blocked sum, which writes Numba's machine code to its disk cache; the parent then loads
that machine code (:meth:`FusedKernels.compile_ahead`), a fraction of the compile time.
The compilation's memory is the child's, and is returned when it exits.

The child is an isolated interpreter (:func:`laddu_dask.processes.python_command`: the
working folder and ``PYTHONPATH`` are not on its path, it imports the parent's
laddu_dask), and it ends with the parent (:func:`laddu_dask.processes.exit_with_parent`),
also when the parent is ended by SIGTERM or SIGKILL while the child compiles.
Started by :func:`compile_in_child` only.

Examples
--------
>>> from laddu_dask.compile.precompile import request
>>> sorted(request("x = 1", "value_sum", "f64", ("real",)))
['cache_kinds', 'function', 'precision', 'source']
"""

from __future__ import annotations

import atexit
import json
import os
import subprocess
import sys
import threading
from typing import Any

__all__ = ["compile_in_child", "main", "request"]

_LOCK = threading.Lock()
_ONE_AT_A_TIME = threading.Lock()
_CHILDREN: set[subprocess.Popen] = set()


def request(source: str, function: str, precision: str, cache_kinds: tuple[str, ...]) -> dict[str, Any]:
    """What the child is sent: the module source, the function and its argument types."""
    return {"source": source, "function": function, "precision": precision,
            "cache_kinds": list(cache_kinds)}


def compile_in_child(fused: Any, with_gradient: bool, timeout: float | None = None) -> bool:
    """Compile ``fused``'s blocked sum in a child process (into Numba's disk cache).

    One child runs at a time per process (a second request waits for the first).  A child
    that takes more than ``timeout`` seconds (default: the ``laddu-dask.compile-timeout``
    setting) is stopped.  Returns ``True`` when the child compiled it, ``False`` when it
    could not run, failed or was stopped (the caller then compiles in this process, where
    a failure raises as usual).
    """
    from laddu_dask import config
    from laddu_dask.compile.kernel_cache import safe_cache_dir

    if timeout is None:
        timeout = config.duration("compile-timeout")

    if not sys.executable or not fused.module_source:
        return False
    payload = json.dumps(request(fused.module_source, "gradient_sum" if with_gradient else "value_sum",
                                 fused.precision, fused.cache_kinds)).encode()
    env = dict(os.environ)
    env["LADDU_DASK_CACHE"] = safe_cache_dir()
    with _ONE_AT_A_TIME:
        return _run_child(payload, env, timeout)


def _run_child(payload: bytes, env: dict[str, str], timeout: float) -> bool:
    from laddu_dask.processes import python_command

    try:
        proc = subprocess.Popen(python_command("laddu_dask.compile.precompile", str(os.getpid())),
                                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, env=env)
    except OSError:
        return False
    with _LOCK:
        _CHILDREN.add(proc)
    try:
        proc.communicate(payload, timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    finally:
        with _LOCK:
            _CHILDREN.discard(proc)
    return proc.returncode == 0


@atexit.register
def _stop_children() -> None:
    """A child still compiling when this process exits is stopped (nothing will load its
    work; a later process compiles again)."""
    with _LOCK:
        children = list(_CHILDREN)
    for proc in children:
        proc.kill()


def main(argv: list[str] | None = None) -> int:
    """The child: read a :func:`request` from standard input, compile, exit 0 on success.

    ``argv`` (default ``sys.argv[1:]``): the parent's process id; the child ends with it.
    """
    from laddu_dask.compile.fused import kernel_signature, prelude
    from laddu_dask.compile.kernel_cache import load_module
    from laddu_dask.processes import exit_with_parent

    argv = sys.argv[1:] if argv is None else argv
    if argv:
        exit_with_parent(int(argv[0]))

    req = json.loads(sys.stdin.buffer.read())
    prelude()
    mod = load_module(req["source"])
    fn = getattr(mod, req["function"])
    fn.compile(kernel_signature(req["precision"], tuple(req["cache_kinds"])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
