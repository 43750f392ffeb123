"""Writing a dataset to one ROOT TTree, atomically, in laddu's branch names or AmpTools'.

Kept apart from :mod:`laddu_dask.data.root` (the reader, which builds datasets) so that
:class:`~laddu_dask.data.dataset.Dataset` can offer ``write_root`` without an import circle.
Each partition becomes one basket of every branch, so reading the file back with the same
``chunk_size`` gives the same partitions.

Examples
--------
>>> import numpy as np, tempfile, os
>>> import uproot
>>> import laddu_dask as ld
>>> ds = ld.Dataset.from_arrays(p4s={"beam": np.ones((3, 4))}, weights=[1.0, 2.0, 0.5])
>>> path = os.path.join(tempfile.mkdtemp(), "beam.root")
>>> write_root(ds, path, tree="events")
>>> uproot.open(path)["events"].keys()
['beam_e', 'beam_px', 'beam_py', 'beam_pz', 'weight']
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from laddu_dask.data.amptools import (
    BEAM_BRANCHES,
    COMPONENTS,
    COUNTER,
    RESERVED,
    WEIGHT,
    check_names,
)
from laddu_dask.data.batch import EventBatch
from laddu_dask.data.checks import cast_column
from laddu_dask.data.paths import PathArg
from laddu_dask.data.read_options import reader_options
from laddu_dask.data.schema import WEIGHT_COLUMN, p4_columns
from laddu_dask.data.sinks import WrittenDataset
from laddu_dask.errors import SchemaError
from laddu_dask.files import atomic_path
from laddu_dask.options import Precision

__all__ = ["write_root", "write_root_format"]

_FINAL = "FinalState"  # uproot names the record's branches E_FinalState, ... (field_name)


def _check_amptools(dataset: WrittenDataset, names: Sequence[str]) -> tuple[str, ...]:
    """The AmpTools names, checked against the dataset's four-vectors and scalars."""
    names = check_names(names)
    p4s = dataset.schema.p4s
    unknown = [n for n in names if n not in p4s]
    if unknown:
        raise SchemaError(f"amptools names {unknown}, which are not four-vectors of the dataset "
                          f"(its four-vectors: {list(p4s)})")
    left = [n for n in p4s if n not in names]
    if left:
        raise SchemaError(f"amptools does not name the dataset's four-vector(s) {left}: the "
                          f"AmpTools convention has no place for them (give every four-vector, "
                          f"the beam's first; its four-vectors: {list(p4s)})")
    clash = [s for s in dataset.schema.scalars if s in RESERVED]
    if clash:
        raise SchemaError(f"scalar(s) {clash} would clash with the AmpTools branches of that name")
    return names


def _stored(batch: EventBatch, column: str, dt: np.dtype) -> np.ndarray:
    """One column (or the weights) of ``batch`` in the storage precision, checked to fit."""
    a = batch.weights if column == WEIGHT_COLUMN else batch.columns[column]
    return cast_column(np.asarray(a), dt, column, batch.offset, batch.source, checked=True)


def _branches(dataset: WrittenDataset, names: tuple[str, ...] | None, dt: np.dtype) -> dict[str, Any]:
    """The tree's branch types, for uproot's ``mktree``."""
    scalars = {s: dt for s in dataset.schema.scalars}
    if names is None:
        return {c: dt for c in dataset.schema.flat_columns()} | {WEIGHT_COLUMN: dt}
    import awkward as ak

    empty = ak.unflatten(np.empty(0, dt), np.empty(0, np.int64))
    final = ak.zip({c: empty for c in COMPONENTS})
    return ({b: dt for b in BEAM_BRANCHES} | {_FINAL: final.type} | scalars | {WEIGHT: dt})


def _entries(batch: EventBatch, names: tuple[str, ...] | None, dt: np.dtype) -> dict[str, Any]:
    """The branches' values for one basket."""
    if names is None:
        return {c: _stored(batch, c, dt) for c in [*batch.columns, WEIGHT_COLUMN]}
    import awkward as ak

    out: dict[str, Any] = {b: _stored(batch, c, dt)
                           for b, c in zip(BEAM_BRANCHES, p4_columns(names[0]), strict=True)}
    counts = np.full(batch.n_events, len(names) - 1, dtype=np.int64)
    final = {}
    for i, comp in enumerate(COMPONENTS):
        block = np.stack([_stored(batch, p4_columns(n)[i], dt) for n in names[1:]], axis=1)
        final[comp] = ak.unflatten(block.reshape(-1), counts)
    out[_FINAL] = ak.zip(final)
    out.update({s: _stored(batch, s, dt) for s in batch.columns if s not in out
                and not any(s in p4_columns(n) for n in names)})
    out[WEIGHT] = _stored(batch, WEIGHT_COLUMN, dt)
    return out


def write_root(dataset: WrittenDataset, path: PathArg, tree: str = "tree", precision: str | None = None,
               amptools: Sequence[str] | None = None) -> None:
    """Write ``dataset`` (all columns and weights) to one ROOT TTree, atomically.

    The file is written by uproot to a hidden temporary file in the same folder, then
    renamed over ``path``; a failure leaves any previous file untouched.

    Parameters
    ----------
    dataset : Dataset
    path : path-like
        The ROOT file (replaced if it exists).
    tree : str, default "tree"
        The TTree's name (laddu's ``RootSink`` default).
    precision : {"f64", "f32"}, optional
        Storage precision: ``"f64"`` by default (``double`` branches), ``"f32"`` with
        ``amptools`` (AmpTools reads ``Float_t``).
    amptools : sequence of str, optional
        Write the AmpTools convention: the dataset's four-vectors, the beam's first, then
        the final-state particles in the order of the ``*_FinalState`` arrays; scalars
        become branches of their own names, the weights ``Weight``.

    Raises
    ------
    ValueError
        A bad ``precision``, or an empty ``tree`` name.
    SchemaError
        ``amptools`` misses a four-vector of the dataset or names one it lacks, or a scalar
        clashes with an AmpTools branch.
    DataError
        A value does not fit ``"f32"`` (naming the column and event); nothing is written.
    FileNotFoundError
        The folder of ``path`` does not exist.
    UnsafeOutputError
        ``path`` is a file the dataset reads.
    """
    if not isinstance(tree, str) or not tree.strip("/"):
        raise ValueError(f"tree must be a non-empty name, got {tree!r}")
    names = None if amptools is None else _check_amptools(dataset, amptools)
    precision = Precision.check(precision or ("f32" if names else "f64"), "precision")
    dt = np.dtype(np.float32 if precision == "f32" else np.float64)
    import uproot

    target = os.path.abspath(os.fspath(path))
    with atomic_path(target, inputs=dataset.sources) as tmp, uproot.recreate(tmp) as f:
        out = f.mktree(tree, _branches(dataset, names, dt), field_name=lambda o, i: f"{i}_{o}",
                       counter_name=lambda counted: COUNTER)
        for batch in dataset.iter_batches(None, np.float64):
            if batch.n_events:
                out.extend(_entries(batch, names, dt))


def write_root_format(dataset: WrittenDataset, path: PathArg, options: Mapping[str, Any] | None,
                      chunk_size: int | None) -> None:
    """The registered ``"root"`` format's writer: :func:`write_root` with ``options``
    ``tree``, ``precision`` and ``amptools``."""
    opts = reader_options(options, ("tree", "precision", "amptools"), "root")
    source = dataset if chunk_size is None else dataset.with_chunk_size(chunk_size)
    write_root(source, path, tree=opts.get("tree", "tree"), precision=opts.get("precision"),
               amptools=opts.get("amptools"))
