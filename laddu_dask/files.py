"""Atomic file writing: the one way laddu-dask puts a file (or folder) in place.

Everything is first written under a fresh hidden name in the target's folder,
created exclusively (``O_CREAT | O_EXCL``: an existing file or symlink of that name
is never opened or followed), with the permissions the user's umask gives a new
file (``0o666 & ~umask``; folders ``0o777 & ~umask``), flushed to disk, and only
then renamed over the target.  A failure (a full disk, an interrupt) removes the
temporary and leaves any previous file untouched.

Examples
--------
>>> import os, tempfile
>>> from laddu_dask.files import atomic_write
>>> path = os.path.join(tempfile.mkdtemp(), "out.txt")
>>> with atomic_write(path) as f:
...     _ = f.write("hello\\n")
>>> open(path).read()
'hello\\n'
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
from collections.abc import Iterator
from typing import IO, Any

__all__ = ["atomic_folder", "atomic_path", "atomic_write", "temporary_name"]


def temporary_name(path: str | os.PathLike[str], suffix: str = ".tmp") -> str:
    """A fresh hidden name beside ``path`` (``.NAME.<random>.tmp``).

    Examples
    --------
    >>> name = temporary_name("/data/out.json")
    >>> name.startswith("/data/.out.json.") and name.endswith(".tmp")
    True
    """
    target = os.path.abspath(os.fspath(path))
    folder, base = os.path.split(target)
    return os.path.join(folder, f".{base}.{secrets.token_hex(8)}{suffix}")


def _create_exclusive(path: str) -> tuple[int, str]:
    """Open a new temporary file beside ``path``; returns ``(fd, name)``."""
    folder = os.path.dirname(os.path.abspath(os.fspath(path)))
    if not os.path.isdir(folder):
        raise FileNotFoundError(f"cannot write {os.fspath(path)}: folder {folder} does not exist")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    for _ in range(100):
        name = temporary_name(path)
        try:
            return os.open(name, flags, 0o666), name
        except FileExistsError:  # pragma: no cover - 64 random bits
            continue
    raise FileExistsError(f"cannot create a temporary file beside {path}")  # pragma: no cover


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str], *, fsync: bool = True) -> Iterator[str]:
    """Yield the name of a new, empty temporary file; move it over ``path`` on success.

    For writers that open files by name (pyarrow's Parquet writer).  The temporary
    is removed if the block raises.

    Examples
    --------
    >>> import os, tempfile
    >>> target = os.path.join(tempfile.mkdtemp(), "x.bin")
    >>> with atomic_path(target) as tmp:
    ...     with open(tmp, "wb") as f:
    ...         _ = f.write(b"\\x00")
    >>> os.path.getsize(target)
    1
    """
    target = os.path.abspath(os.fspath(path))
    if os.path.isdir(target):
        raise IsADirectoryError(f"cannot write a file over the folder {target}")
    fd, tmp = _create_exclusive(target)
    os.close(fd)
    try:
        yield tmp
        if fsync:
            with open(tmp, "rb") as f:
                os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike[str], mode: str = "w", *, fsync: bool = True,
                 **open_kwargs: Any) -> Iterator[IO[Any]]:
    """Yield an open file whose contents replace ``path`` when the block succeeds.

    Parameters
    ----------
    path : path-like
        The target.
    mode : {"w", "wb"}
        Text or binary.
    fsync : bool
        Flush the data to the disk before the rename (default).
    **open_kwargs
        Passed to :func:`open` (``encoding``, ``newline``).

    Raises
    ------
    OSError
        The folder is missing or unwritable, or the disk is full; nothing is replaced.
    """
    if mode not in ("w", "wb"):
        raise ValueError(f"mode must be 'w' or 'wb', got {mode!r}")
    with atomic_path(path, fsync=False) as tmp, open(tmp, mode, **open_kwargs) as f:
        yield f
        f.flush()
        if fsync:
            os.fsync(f.fileno())


@contextlib.contextmanager
def atomic_folder(path: str | os.PathLike[str]) -> Iterator[str]:
    """Yield a new, empty temporary folder that replaces the folder (or file) ``path``.

    The previous content of ``path`` is removed only after the new folder is in place.

    Examples
    --------
    >>> import os, tempfile
    >>> target = os.path.join(tempfile.mkdtemp(), "parts")
    >>> with atomic_folder(target) as tmp:
    ...     open(os.path.join(tmp, "a.txt"), "w").close()
    >>> os.listdir(target)
    ['a.txt']
    """
    target = os.path.abspath(os.fspath(path))
    folder = os.path.dirname(target)
    if not os.path.isdir(folder):
        raise FileNotFoundError(f"cannot write {target}: folder {folder} does not exist")
    tmp = temporary_name(target)
    os.mkdir(tmp, 0o777)
    try:
        yield tmp
        old = None
        if os.path.lexists(target):
            old = temporary_name(target, ".old")
            os.replace(target, old)
        os.replace(tmp, target)
        if old is not None:
            if os.path.isdir(old) and not os.path.islink(old):
                shutil.rmtree(old, ignore_errors=True)
            else:
                os.unlink(old)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def write_json(path: str | os.PathLike[str], content: dict) -> None:
    """Write ``content`` as JSON through :func:`atomic_write`, with provenance: the
    laddu-dask version and the UTC time, under ``"provenance"``."""
    import datetime
    import json
    from importlib.metadata import PackageNotFoundError, version

    try:
        here = version("laddu-dask")
    except PackageNotFoundError:  # pragma: no cover - run from a source tree
        here = "unknown"
    stamp = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    body = {**content, "provenance": {"laddu_dask": here, "written": stamp}}
    with atomic_write(path) as out:
        out.write(json.dumps(body, indent=2, allow_nan=True) + "\n")


def read_json(path: str | os.PathLike[str], kind: str) -> dict:
    """The JSON object :func:`write_json` wrote, whose ``"kind"`` must be ``kind``.

    Raises
    ------
    ValueError
        If the file is not JSON or holds another kind of object (naming the file).
    """
    import json

    with open(path, encoding="utf-8") as f:
        try:
            content = json.load(f)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{os.fspath(path)} is not JSON: {exc}") from None
    if not isinstance(content, dict) or content.get("kind") != kind:
        found = content.get("kind") if isinstance(content, dict) else type(content).__name__
        raise ValueError(f"{os.fspath(path)} holds {found!r}, not a {kind}")
    return content
