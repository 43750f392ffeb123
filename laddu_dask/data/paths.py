"""Turn the paths a user gives (files, folders, glob patterns) into a list of distinct files.

An existing path is always taken literally, so ``run[1].parquet`` names that file and is
never read as a pattern matching ``run1.parquet``; only a path that does not exist and
contains ``*``, ``?`` or ``[`` is a glob. A file reached twice (by a pattern and by its
name, through a symbolic or hard link, or spelled with ``..``) is an error, since reading
it twice would count its events twice.

Examples
--------
>>> import os, tempfile
>>> from laddu_dask.data.paths import expand_paths
>>> folder = tempfile.mkdtemp()
>>> for name in ("run1.parquet", "run[1].parquet"):
...     open(os.path.join(folder, name), "w").close()
>>> [os.path.basename(p) for p in expand_paths(os.path.join(folder, "run[1].parquet"))]
['run[1].parquet']
>>> expand_paths([os.path.join(folder, "*.parquet"), os.path.join(folder, "run1.parquet")])
Traceback (most recent call last):
...
laddu_dask.errors.DataError: file .../run1.parquet is given twice: ...
"""

from __future__ import annotations

import glob
import os
from collections.abc import Mapping, Sequence
from typing import Any

from laddu_dask.data.fs import FORMATS, expand_url, is_url
from laddu_dask.errors import DataError

PathArg = str | os.PathLike[str]


def _expand_one(p: str, suffix: str) -> list[str]:
    """The files one path names: itself, a folder's ``*SUFFIX`` (sorted), or a glob's matches."""
    if os.path.isdir(p):
        found = sorted(
            os.path.join(p, f) for f in os.listdir(p)
            if f.endswith(suffix) and os.path.isfile(os.path.join(p, f))
        )
        if not found:
            raise FileNotFoundError(f"folder {p!r} holds no *{suffix} files")
        return found
    if os.path.isfile(p):
        return [p]
    if os.path.exists(p):
        raise FileNotFoundError(f"{p!r} is neither a {FORMATS[suffix]} file nor a folder")
    if glob.has_magic(p):
        found = sorted(f for f in glob.glob(p, recursive=True) if os.path.isfile(f))
        if not found:
            raise FileNotFoundError(f"no files match {p!r}")
        return found
    raise FileNotFoundError(f"no such {FORMATS[suffix]} file or folder: {p!r}")


def _spelling(item: str, found: str) -> str:
    return repr(item) if item == found else f"{item!r} (as {found!r})"


def expand_paths(path: PathArg | Sequence[PathArg],
                 storage_options: Mapping[str, Any] | None = None,
                 suffix: str = ".parquet") -> list[str]:
    """Resolve a file, folder (its ``*.parquet``, or ``*SUFFIX``, sorted), glob, or a list of these.

    A path that exists is taken literally even when it contains glob characters;
    a path that does not exist and has them is a pattern. A URL (``s3://...``,
    ``memory://...``, ``file://...``) is resolved the same way by fsspec, and its files
    come back as full URLs.

    Parameters
    ----------
    path : path-like or sequence of path-like
        What the user gave; ``~`` is expanded.
    storage_options : dict, optional
        Passed to fsspec for URLs (credentials, endpoints), as in Dask.
    suffix : {".parquet", ".root"}
        What a folder's files end in.

    Returns
    -------
    list of str
        The files, in the order given (a folder's or pattern's matches sorted).

    Raises
    ------
    FileNotFoundError
        Naming the pattern, folder or file that matched nothing.
    DataError
        When one file is named twice (the same device and inode: through a pattern
        and its name, a symbolic or hard link, or another spelling), naming the file
        and both spellings.

    Examples
    --------
    >>> expand_paths("/no/such/*.parquet")
    Traceback (most recent call last):
    ...
    FileNotFoundError: no files match '/no/such/*.parquet'
    """
    items = [path] if isinstance(path, str | os.PathLike) else list(path)
    if not items:
        raise FileNotFoundError(f"no {FORMATS[suffix]} paths given (empty list)")
    files: list[str] = []
    seen: dict[tuple[int, int], tuple[str, str]] = {}  # (device, inode) -> (file, spelling)
    urls: dict[str, str] = {}  # a URL's file -> its spelling
    for item in items:
        p = os.fspath(item)
        if is_url(p):
            for f in expand_url(p, storage_options, suffix):
                if f in urls:
                    raise DataError(
                        f"file {f} is given twice: as {urls[f]} and as {_spelling(p, f)}; name "
                        "each file once (reading it twice would count its events twice)"
                    )
                urls[f] = _spelling(p, f)
                files.append(f)
            continue
        p = os.path.expanduser(p)
        for f in _expand_one(p, suffix):
            st = os.stat(f)
            key = (st.st_dev, st.st_ino)
            where = _spelling(p, f)
            if key in seen:
                first, spelled = seen[key]
                raise DataError(
                    f"file {first} is given twice: as {spelled} and as {where}; name each "
                    "file once (reading it twice would count its events twice)"
                )
            seen[key] = (os.path.realpath(f), where)
            files.append(f)
    return files
