"""The on-disk cache of generated kernel modules (and of Numba's machine code).

:func:`load_module` turns generated kernel source into a module whose file lives in
:func:`cache_dir`, so that Numba's ``cache=True`` finds the machine code a previous
process compiled.  The folder is checked private before anything in it is used, the
code that runs is always the source generated in this process, and files are written
atomically through :mod:`laddu_dask.files` (exclusive temporaries that never follow a
symlink).

Examples
--------
>>> import os
>>> from laddu_dask.compile.kernel_cache import safe_cache_dir
>>> folder = safe_cache_dir()  # created if missing, refused if others may write it
>>> os.stat(folder).st_mode & 0o022
0
"""

from __future__ import annotations

import hashlib
import os
import stat
import sys
import threading
import types
from typing import Any

from laddu_dask import config
from laddu_dask.errors import KernelCacheError
from laddu_dask.files import atomic_write, private_folder

__all__ = ["cache_dir", "load_module", "safe_cache_dir"]

_LOCK = threading.Lock()
_LOADED: dict[str, Any] = {}


def cache_dir() -> str:
    """Where generated kernel modules (and Numba's machine code) are kept.

    ``$LADDU_DASK_CACHE`` if set, else the Dask config ``laddu-dask.kernel-cache`` if set,
    else ``~/.cache/laddu_dask/kernels``.

    Loading kernels runs code from this folder, so it must be private:
    :func:`safe_cache_dir` creates it ``0o700`` and refuses (:class:`KernelCacheError`)
    a folder, or its ``__pycache__``, that another user owns or that its group or others
    may write (set ``LADDU_DASK_CACHE`` to a private folder on a shared file system).
    Within a private folder:

    * a kernel module ``laddu_dask_kernel_<digest>.py`` is never imported as found: the
      code that runs is the source generated in this process, and the file is rewritten
      (atomically, :mod:`laddu_dask.files`) whenever its bytes differ from that source (a
      truncated, stale or planted file), so a bad file is replaced, not run and not an
      error forever;
    * Numba's own cache (``__pycache__/*.nbi``, ``*.nbc``, written by ``cache=True``) is
      keyed by a hash of the module file's content, which is the generated source; those
      files are *unpickled* when loaded, so a hostile one would run code: what protects
      them is the folder check (nobody else can write into the folder or its
      ``__pycache__``).  ``$NUMBA_CACHE_DIR``, when set, moves Numba's files there and is
      then the user's responsibility.

    The folders above the cache folder should not be writable by others either (a sticky
    folder such as ``/tmp`` is fine): whoever can rename the cache folder can swap it.

    Examples
    --------
    >>> os.path.isabs(os.path.expanduser(cache_dir()))
    True
    """
    base = (os.environ.get("LADDU_DASK_CACHE") or config.get("kernel-cache")
            or os.path.join("~", ".cache", "laddu_dask", "kernels"))
    return os.path.expanduser(os.fspath(base))


_FIX = "set LADDU_DASK_CACHE to a private folder of your own"


def safe_cache_dir() -> str:
    """:func:`cache_dir`, created (``0o700``) and checked private, with its ``__pycache__``.

    Raises
    ------
    KernelCacheError
        The folder cannot be created, belongs to another user, or may be written by its
        group or others (the message names the folder and the fix).

    Examples
    --------
    >>> os.path.isdir(os.path.join(safe_cache_dir(), "__pycache__"))
    True
    """
    folder = os.path.abspath(cache_dir())
    for path in (folder, os.path.join(folder, "__pycache__")):
        private_folder(path, "the kernel cache folder", "plant code that laddu-dask would run", _FIX,
                       KernelCacheError)
    return folder


def _module_name(source: str, kind: str = "kernel") -> str:
    """The module (and file) name of generated ``source``: ``laddu_dask_<kind>_`` and a
    digest of the source and of the Numba and Python versions that compile it."""
    import numba

    digest = hashlib.sha256((source + numba.__version__ + sys.version).encode()).hexdigest()[:24]
    return f"laddu_dask_{kind}_{digest}"


def _file_holds(path: str, data: bytes) -> bool:
    """Whether ``path`` is a regular file (not a symlink) whose bytes are exactly ``data``."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError:  # missing, a symlink, unreadable: rewrite it
        return False
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            return False
        return f.read(len(data) + 1) == data


def load_module(source: str, kind: str = "kernel") -> Any:
    """The module of generated kernel ``source``, with its file in the cache folder.

    ``kind`` is the second word of the module's name (``"kernel"``, or ``"prelude"`` for
    the helpers every kernel module imports).

    The code executed is ``source`` itself (compiled with the cache file's name, which
    Numba's cache and tracebacks use); the file is rewritten atomically unless it already
    holds exactly these bytes.

    Raises
    ------
    KernelCacheError
        The cache folder is unsafe (:func:`safe_cache_dir`) or the file cannot be written
        (a full disk, a read-only folder).
    """
    name = _module_name(source, kind)
    with _LOCK:
        mod = _LOADED.get(name)
        if mod is not None:
            return mod
        folder = safe_cache_dir()
        path = os.path.join(folder, name + ".py")
        data = source.encode()
        if not _file_holds(path, data):
            try:
                with atomic_write(path, "wb") as f:
                    f.write(data)
            except OSError as err:
                raise KernelCacheError(
                    f"cannot write the kernel cache file {path}: {err.strerror or err}; "
                    f"free space in {folder} or {_FIX}"
                ) from err
        mod = types.ModuleType(name)
        mod.__file__ = path
        sys.modules[name] = mod
        exec(compile(source, path, "exec"), mod.__dict__)  # noqa: S102 - our generated source
        _LOADED[name] = mod
        return mod
