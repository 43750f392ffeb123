"""The one registry of file formats: each a :class:`~laddu_dask.io.FormatSpec`, found by name or suffix.

laddu-dask's own readers are registered formats (``"parquet"`` for ``.parquet``/``.pq``,
``"root"`` for ``.root``): :func:`~laddu_dask.read_parquet`, :func:`~laddu_dask.read_root`,
``ParquetSource``, ``RootSource`` and ``Dataset.write_to(ParquetSink(...))`` look them up here,
and :func:`~laddu_dask.io.read` picks one by a path's suffix. A user's format is one call away:
``ld.io.register_format(spec, suffixes=[".toy"])``; replacing a registered name takes
``replace=True``. laddu's ``FormatSpec`` needs no registration (it is passed where used), and
every laddu call taking a spec still does; the registry is what a suffix or a name resolves to.

Examples
--------
>>> import laddu_dask as ld
>>> ld.io.format_for("events/run1.parquet").name, sorted(ld.io.formats())[:2]
('parquet', ['parquet', 'root'])
"""

from __future__ import annotations

import os
from typing import Any

__all__ = ["format_for", "format_named", "formats", "store", "unregister_format"]

#: What the registry holds: :class:`laddu_dask.io.FormatSpec` objects. Their class is
#: defined above this module (:mod:`~laddu_dask.data.formats`, which builds datasets and
#: registers the specs here), and the modules that look formats up here (sources and
#: ``Dataset.write_to``) sit below the dataset, so the registry names the type without
#: importing it, as :class:`~laddu_dask.io.FormatSource` and :class:`~laddu_dask.io.FormatSink`
#: hold their spec.
FormatSpec = Any

_FORMATS: dict[str, FormatSpec] = {}
_SUFFIXES: dict[str, str] = {}


def store(spec: FormatSpec, suffixes: tuple[str, ...], replace: bool) -> None:
    """Put ``spec`` under its name and ``suffixes`` (checked by
    :func:`~laddu_dask.data.formats.register_format`, the public way in)."""
    name = spec.name
    if not replace:
        if name in _FORMATS:
            raise ValueError(f"a format named {name!r} is registered already; pass replace=True to "
                             "replace it")
        for s in suffixes:
            if s in _SUFFIXES and _SUFFIXES[s] != name:
                raise ValueError(f"suffix {s!r} belongs to format {_SUFFIXES[s]!r}; pass replace=True to "
                                 "take it")
    _FORMATS[name] = spec
    for s in suffixes:
        _SUFFIXES[s] = name


def unregister_format(name: str) -> None:
    """Remove the format ``name`` and its suffixes; ValueError if none is registered."""
    format_named(name)
    del _FORMATS[name]
    for s in [s for s, n in _SUFFIXES.items() if n == name]:
        del _SUFFIXES[s]


def formats() -> dict[str, FormatSpec]:
    """The registered formats, by name (a copy)."""
    return dict(_FORMATS)


def format_named(name: str) -> FormatSpec:
    """The registered format ``name``.

    Raises
    ------
    ValueError
        No format of that name (naming it and the registered ones).
    """
    try:
        return _FORMATS[name]
    except (KeyError, TypeError):
        raise ValueError(f"no format named {name!r} is registered (registered: "
                         f"{', '.join(sorted(_FORMATS)) or 'none'})") from None


def format_for(path: str | os.PathLike[str]) -> FormatSpec:
    """The registered format of ``path``, by its suffix (``.parquet``, ``.root``, a user's).

    Raises
    ------
    ValueError
        No format claims the suffix (naming the path and the registered suffixes).
    """
    text = os.fspath(path).rstrip("/")
    lowered = text.lower()
    for suffix in sorted(_SUFFIXES, key=len, reverse=True):
        if lowered.endswith(suffix):
            return _FORMATS[_SUFFIXES[suffix]]
    raise ValueError(f"no registered format reads {text!r}: its suffix is none of "
                     f"{', '.join(sorted(_SUFFIXES)) or 'none'}; pass format= or register one")
