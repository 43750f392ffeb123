"""Atomic file writing: the one way laddu-dask puts a file (or folder) in place.

Everything is first written under a fresh hidden name in the target's folder,
created exclusively (``O_CREAT | O_EXCL``: an existing file or symlink of that name
is never opened or followed), with the permissions the user's umask gives a new
file (``0o666 & ~umask``; folders ``0o777 & ~umask``), flushed to disk, and only
then renamed over the target.  A failure (a full disk, an interrupt) removes the
temporary and leaves any previous file untouched.

What may be replaced
--------------------
One rule, :func:`check_output`, guards every write, before anything is written:

* a file may replace an existing file, unless that file is an input being read;
* a folder may replace only a folder that laddu-dask wrote itself, recognised by the
  marker file :data:`OUTPUT_MARKER` written in it (listing the files written with it),
  holding nothing but that marker and files it lists; or an empty folder.  Never a
  file, a symbolic link, the working folder or a folder above it, nor a folder that is
  or holds an input being read.

Anything else is an :class:`~laddu_dask.errors.UnsafeOutputError` naming the path, so
nothing a user made is deleted or overwritten by an output.

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
import stat
from collections.abc import Iterable, Iterator
from typing import IO, Any

from laddu_dask.errors import UnsafeOutputError

__all__ = ["OUTPUT_MARKER", "atomic_folder", "atomic_path", "atomic_write", "check_output", "private_folder",
           "temporary_name"]

#: The file laddu-dask writes into every folder it writes (JSON: the names of the files
#: written with it); a folder holding it and nothing else but those files is laddu-dask's
#: own output and may be replaced.  Hidden, and not ``*.parquet``, so no reader sees it.
OUTPUT_MARKER = ".laddu-dask-output.json"
_MARKER_KIND = "laddu-dask output folder"


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


def private_folder(path: str | os.PathLike[str], what: str, why: str, fix: str,
                   error: type[Exception] = PermissionError) -> str:
    """Create ``path`` (``0o700``) if missing and check that only the current user may
    write it; returns its absolute path.

    laddu-dask keeps files it reads back later (compiled kernels, prepared partitions)
    only in such folders: nobody else can plant or swap a file in them.

    Parameters
    ----------
    what : str
        The folder's name in messages (``"the kernel cache folder"``).
    why : str
        What another user could do with a folder they may write (``"plant code that
        laddu-dask would run"``).
    fix : str
        How the user chooses another folder.
    error : type
        The exception raised (with ``what``, the path, the cause and ``fix``).

    Examples
    --------
    >>> import tempfile
    >>> folder = private_folder(os.path.join(tempfile.mkdtemp(), "mine"), "the folder",
    ...                         "plant files", "choose another")
    >>> oct(os.stat(folder).st_mode & 0o777)
    '0o700'
    """
    folder = os.path.abspath(os.fspath(path))
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
    except OSError as err:
        raise error(f"cannot create {what} {folder}: {err.strerror}; {fix}") from err
    try:
        st = os.stat(folder)
    except OSError as err:  # pragma: no cover - removed between the two calls
        raise error(f"cannot use {what} {folder}: {err.strerror}; {fix}") from err
    if not stat.S_ISDIR(st.st_mode):
        raise error(f"{what} {folder} is not a folder; {fix}")
    uid = os.getuid() if hasattr(os, "getuid") else None
    if uid is not None and st.st_uid != uid:
        raise error(f"{what} {folder} belongs to user id {st.st_uid}, not to you (user id {uid}): "
                    f"another user could {why}; {fix}")
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise error(f"{what} {folder} is writable by its group or others "
                    f"(mode {stat.S_IMODE(st.st_mode):#o}): another user could {why}; "
                    f"run `chmod go-w {folder}` or {fix}")
    return folder


def _real(path: str) -> str:
    return os.path.realpath(path)


def _within(path: str, folder: str) -> bool:
    """Whether the real path ``path`` is ``folder`` or lies under it."""
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _marked_files(folder: str) -> set[str] | None:
    """The files the marker of ``folder`` lists (``None``: no readable marker of ours)."""
    import json

    marker = os.path.join(folder, OUTPUT_MARKER)
    if not os.path.isfile(marker) or os.path.islink(marker):
        return None
    try:
        with open(marker, encoding="utf-8") as f:
            content = json.load(f)
    except (OSError, ValueError):
        return None
    if not isinstance(content, dict) or content.get("kind") != _MARKER_KIND:
        return None
    files = content.get("files")
    if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
        return None
    return set(files)


def check_output(path: str | os.PathLike[str], *, folder: bool = False,
                 inputs: Iterable[str | os.PathLike[str]] = ()) -> str:
    """The absolute path of the output ``path`` once it is safe to write (the one rule).

    Parameters
    ----------
    path : path-like
        The file or folder to be written.
    folder : bool
        Whether a folder is written (it replaces ``path`` whole) rather than a file.
    inputs : iterable of path-like
        Files or folders being read (those that do not exist are ignored).

    Raises
    ------
    UnsafeOutputError
        When writing would replace an input, or (for a folder) a file, a symbolic link,
        the working folder or a folder above it, or a folder holding anything other than
        what a previous laddu-dask write left; the message names the path.
    FileNotFoundError
        When the folder ``path`` goes into does not exist.
    IsADirectoryError
        When a file would replace a folder.

    Examples
    --------
    >>> import os, tempfile
    >>> here = tempfile.mkdtemp()
    >>> open(os.path.join(here, "notes.txt"), "w").close()
    >>> try:
    ...     check_output(here, folder=True)
    ... except UnsafeOutputError as error:
    ...     print(str(error).split(": ", 1)[1])
    it holds files laddu-dask did not write (notes.txt); give a new or empty folder, or remove them
    """
    target = os.path.abspath(os.fspath(path))
    parent = os.path.dirname(target)
    if not os.path.isdir(parent):
        raise FileNotFoundError(f"cannot write {target}: folder {parent} does not exist")
    real = _real(target)
    what = "folder" if folder else "file"
    for source in inputs:
        source = os.fspath(source)
        if not os.path.exists(source):
            continue
        source_real = _real(os.path.abspath(source))
        if (_within(source_real, real) if folder else source_real == real):
            raise UnsafeOutputError(f"refusing to write the {what} {target}: it is or holds the input "
                                    f"{source}, which is being read; choose another output path")
    if not folder:
        if os.path.isdir(target):
            raise IsADirectoryError(f"cannot write a file over the folder {target}")
        return target
    cwd = _real(os.getcwd())
    if _within(cwd, real):
        where = "the working folder" if cwd == real else f"a parent of the working folder {cwd}"
        raise UnsafeOutputError(f"refusing to replace the folder {target}: it is {where}; "
                                "give a new folder for the output")
    if os.path.islink(target):
        raise UnsafeOutputError(f"refusing to replace {target}: it is a symbolic link; give the folder "
                                "it points to, or a new folder")
    if not os.path.lexists(target):
        return target
    if not os.path.isdir(target):
        raise UnsafeOutputError(f"refusing to replace the file {target} by a folder; give a new folder")
    entries = set(os.listdir(target))
    ours = _marked_files(target)
    # without a valid marker of ours, a file of the marker's name is foreign too
    foreign = sorted(entries - (ours | {OUTPUT_MARKER} if ours is not None else set()))
    if foreign:
        shown = ", ".join(foreign[:3]) + (f" and {len(foreign) - 3} more" if len(foreign) > 3 else "")
        raise UnsafeOutputError(f"refusing to replace the folder {target}: it holds files laddu-dask did "
                                f"not write ({shown}); give a new or empty folder, or remove them")
    return target


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str], *, fsync: bool = True,
                inputs: Iterable[str | os.PathLike[str]] = ()) -> Iterator[str]:
    """Yield the name of a new, empty temporary file; move it over ``path`` on success.

    For writers that open files by name (pyarrow's Parquet writer).  The temporary
    is removed if the block raises.  ``path`` is checked first by :func:`check_output`
    (never one of the ``inputs``).

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
    inputs = list(inputs)
    target = check_output(path, inputs=inputs)
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
                 inputs: Iterable[str | os.PathLike[str]] = (), **open_kwargs: Any) -> Iterator[IO[Any]]:
    """Yield an open file whose contents replace ``path`` when the block succeeds.

    Parameters
    ----------
    path : path-like
        The target.
    mode : {"w", "wb"}
        Text or binary.
    fsync : bool
        Flush the data to the disk before the rename (default).
    inputs : iterable of path-like
        Files being read, which ``path`` must not be (:func:`check_output`).
    **open_kwargs
        Passed to :func:`open` (``encoding``, ``newline``).

    Raises
    ------
    OSError
        The folder is missing or unwritable, or the disk is full; nothing is replaced.
    UnsafeOutputError
        ``path`` is one of the ``inputs``.
    """
    if mode not in ("w", "wb"):
        raise ValueError(f"mode must be 'w' or 'wb', got {mode!r}")
    with atomic_path(path, fsync=False, inputs=inputs) as tmp, open(tmp, mode, **open_kwargs) as f:
        yield f
        f.flush()
        if fsync:
            os.fsync(f.fileno())


@contextlib.contextmanager
def atomic_folder(path: str | os.PathLike[str], *,
                  inputs: Iterable[str | os.PathLike[str]] = ()) -> Iterator[str]:
    """Yield a new, empty temporary folder that replaces the folder ``path``.

    ``path`` is checked by :func:`check_output` before the temporary folder is made and
    again just before the replacement: it may be missing, empty, or a previous output of
    laddu-dask (nothing else).  The new folder gets the marker :data:`OUTPUT_MARKER`
    listing its files; the previous output is removed only after the new folder is in
    place.

    Raises
    ------
    UnsafeOutputError
        ``path`` holds something laddu-dask did not write, is the working folder or above
        it, a file or a symbolic link, or is or holds one of the ``inputs``.

    Examples
    --------
    >>> import os, tempfile
    >>> target = os.path.join(tempfile.mkdtemp(), "parts")
    >>> with atomic_folder(target) as tmp:
    ...     open(os.path.join(tmp, "a.txt"), "w").close()
    >>> sorted(os.listdir(target))
    ['.laddu-dask-output.json', 'a.txt']
    """
    inputs = list(inputs)
    target = check_output(path, folder=True, inputs=inputs)
    tmp = temporary_name(target)
    os.mkdir(tmp, 0o777)
    try:
        yield tmp
        import json

        names = sorted(os.listdir(tmp))
        with atomic_write(os.path.join(tmp, OUTPUT_MARKER)) as marker:
            marker.write(json.dumps({"kind": _MARKER_KIND, "files": names}, indent=1) + "\n")
        check_output(target, folder=True, inputs=inputs)  # nothing foreign arrived meanwhile
        old = None
        if os.path.lexists(target):
            old = temporary_name(target, ".old")
            os.replace(target, old)
        os.replace(tmp, target)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def write_json(path: str | os.PathLike[str], content: dict, *, overwrite: bool = True) -> None:
    """Write ``content`` as JSON through :func:`atomic_write`, with provenance: the
    laddu-dask version and the UTC time, under ``"provenance"``.

    With ``overwrite=False`` an existing ``path`` is never replaced: the complete file is
    linked into place only if nothing is there (also against a file appearing meanwhile),
    else :class:`~laddu_dask.errors.UnsafeOutputError` names the path."""
    import datetime
    import json
    from importlib.metadata import PackageNotFoundError, version

    try:
        here = version("laddu-dask")
    except PackageNotFoundError:  # pragma: no cover - run from a source tree
        here = "unknown"
    stamp = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    body = {**content, "provenance": {"laddu_dask": here, "written": stamp}}
    text = json.dumps(body, indent=2, allow_nan=True) + "\n"
    if overwrite:
        with atomic_write(path) as out:
            out.write(text)
        return
    _write_new(path, text)


def _write_new(path: str | os.PathLike[str], text: str) -> None:
    """Put a file holding ``text`` at ``path``, which must not exist (no-clobber hard link)."""
    target = check_output(path)
    fd, tmp = _create_exclusive(target)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        try:
            os.link(tmp, target)
        except FileExistsError:
            raise UnsafeOutputError(f"refusing to replace {target}: it exists; pass overwrite=True to "
                                    "replace it") from None
    finally:
        os.unlink(tmp)


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
