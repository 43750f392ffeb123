"""Read event samples from ROOT TTrees through uproot: laddu's branch names, or AmpTools'.

In laddu's convention (what ``laddu.RootSink`` and :meth:`Dataset.write_root` write) the
branches are the columns of a Parquet file: ``NAME_e, NAME_px, NAME_py, NAME_pz`` per
four-vector, one branch per scalar and an optional ``weight``. In the AmpTools convention
(``amptools=[beam, particle1, ...]``, see :mod:`laddu_dask.data.amptools`) the beam and
the final-state arrays become four-vectors under the names given.

Only metadata (and, for an AmpTools tree, the ``NumFinalState`` counts) are read by
:func:`read_root`; each partition later reads just its entries of just the branches asked
for. Partitions are cut at the tree's basket boundaries (when its baskets are smaller than
a chunk), so that no basket is decompressed by two partitions.

Examples
--------
>>> import numpy as np, os, tempfile
>>> from laddu_dask.data.dataset import Dataset
>>> ds = Dataset.from_arrays(p4s={"beam": np.tile([8.5, 0, 0, 8.5], (5, 1))}, chunk_size=2)
>>> path = os.path.join(tempfile.mkdtemp(), "beam.root")
>>> ds.write_root(path, tree="events")
>>> back = read_root(path, tree="events", chunk_size=2)
>>> back.n_partitions, back.schema.p4s
(3, ('beam',))
"""

from __future__ import annotations

import bisect
import contextlib
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from dask.base import is_dask_collection, tokenize

from laddu_dask.budgets import MemoryBudget
from laddu_dask.data.amptools import COUNTER, RESERVED, amptools_leaves, check_names
from laddu_dask.data.batch import EventBatch
from laddu_dask.data.checks import (
    cast_column,
    check_same_columns,
    resolve_chunk_size,
    split_rows,
)
from laddu_dask.data.dataset import Dataset
from laddu_dask.data.formats import FormatSpec, register_format
from laddu_dask.data.fs import filesystem, is_url, open_input
from laddu_dask.data.identity import FileIdentity
from laddu_dask.data.partition import Partition, load_from_file
from laddu_dask.data.paths import PathArg, expand_paths
from laddu_dask.data.read_options import check_cache, check_validate, reader_options, select_schema
from laddu_dask.data.registry import format_named
from laddu_dask.data.root_writer import write_root_format
from laddu_dask.data.schema import WEIGHT_COLUMN, Schema
from laddu_dask.errors import DataChangedError, DataError, LadduDaskError, SchemaError

__all__ = ["RootOrigin", "RootPartition", "read_root"]

#: What a load holds besides the arrays it returns, per entry of the baskets it reads, for
#: each branch in flight: the compressed basket, the decompressed one and the array
#: uproot concatenates them into (8-byte values; an estimate, not a measurement).
DECODE_BYTES_PER_ENTRY = 3 * 8

#: What opening the file holds (its directory, streamers and the tree's metadata).
READ_FIXED_BYTES = 2**20


# ----------------------------------------------------------------------------- opening


def _numeric(interp: Any) -> bool:
    """Whether an uproot interpretation gives one number per entry (float, int, bool)."""
    from uproot.interpretation.numerical import Numerical

    if not isinstance(interp, Numerical):
        return False
    dt = interp.to_dtype
    return dt.shape == () and dt.kind in "fiub"


def _jagged_numeric(interp: Any) -> bool:
    """Whether an uproot interpretation is a variable-length array of numbers per entry."""
    from uproot.interpretation.jagged import AsJagged

    return isinstance(interp, AsJagged) and _numeric(interp.content)


def _trees(f: Any) -> list[str]:
    return f.keys(recursive=True, cycle=False, filter_classname="TTree")


def _find_tree(f: Any, path: str, tree: str | None) -> tuple[str, Any]:
    """The tree ``tree`` of the open file ``f`` (its first TTree for None) and its name."""
    import uproot

    if tree is None:
        names = _trees(f)
        if not names:
            raise DataError(f"{path} holds no TTree (its objects: {sorted(f.classnames().items())})")
        tree = names[0]
    try:
        obj = f[tree]
    except uproot.KeyInFileError:
        raise DataError(f"{path} has no tree {tree!r} (its trees: {_trees(f)})") from None
    if not isinstance(obj, uproot.TTree):
        hint = ("; uproot 5.7 writes an RNTuple for f[name] = {...} and a TTree for f.mktree(...)"
                if "RNTuple" in obj.classname else "")
        raise DataError(f"{path}:{tree} is a {obj.classname}, not a TTree (its trees: "
                        f"{_trees(f)}){hint}")
    return tree, obj


@contextlib.contextmanager
def _uproot_errors(what: str) -> Iterator[None]:
    """Turn the errors uproot raises for a damaged file into a DataError: ``what`` failed."""
    try:
        yield
    except (LadduDaskError, FileNotFoundError):
        raise
    except Exception as exc:  # uproot's many errors for a damaged file or basket
        raise DataError(f"{what}: {type(exc).__name__}: {exc}") from None


@contextlib.contextmanager
def _open(path: str, fs: Any, tree: str | None,
          identity: FileIdentity | None = None) -> Iterator[tuple[FileIdentity, str, Any]]:
    """Open ``path`` and its tree; with ``identity``, first check the file is still that one.

    Yields ``(identity, tree name, uproot tree)``.
    """
    import uproot

    try:
        with open_input(path, fs) as handle:
            now = FileIdentity.read(handle, path, fs, kind="ROOT")
            if identity is not None:
                identity.check(now, path)
            try:
                f = uproot.open(handle)
            except (ValueError, OSError, uproot.deserialization.DeserializationError) as exc:
                raise DataError(f"{path} is not a readable ROOT file: {exc}") from None
            with f:
                yield (now, *_find_tree(f, path, tree))
    except FileNotFoundError:
        if identity is None:
            raise
        raise DataChangedError(f"{path} was deleted or moved since it was opened") from None


@dataclass(frozen=True)
class _TreeInfo:
    path: str
    tree: str
    n_entries: int
    boundaries: tuple[int, ...]  # entries where every branch read starts a new basket
    identity: FileIdentity
    filesystem: Any = None


def _layout(path: str, tree: str, obj: Any,
            amptools: Sequence[str] | None) -> tuple[Schema, dict[str, tuple[str, int]]]:
    """The schema of a tree and where each column lives: ``{column: (branch, index)}``."""
    where = f"{path}:{tree}"
    typed: list[tuple[str, str, bool]] = []
    leaves: dict[str, tuple[str, int]] = {}
    branches = {name: obj[name] for name in obj.keys()}
    if amptools is not None:
        wanted = amptools_leaves(amptools)
        for column, (branch, index) in wanted.items():
            if branch not in branches:
                if column == WEIGHT_COLUMN:
                    continue
                raise SchemaError(
                    f"{where} lacks branch {branch!r} of the AmpTools convention (needed for "
                    f"column {column!r}; its branches: {sorted(branches)})"
                )
            interp = branches[branch].interpretation
            ok = _jagged_numeric(interp) if index >= 0 else _numeric(interp)
            if not ok:
                shape = "a variable-length array of numbers" if index >= 0 else "a number per entry"
                raise SchemaError(f"branch {branch!r} of {where} has type "
                                  f"{branches[branch].typename}; expected {shape} (AmpTools convention)")
            typed.append((column, branches[branch].typename, True))
            leaves[column] = (branch, index)
        if COUNTER not in branches or not _numeric(branches[COUNTER].interpretation):
            raise SchemaError(f"{where} lacks the integer branch {COUNTER!r} of the AmpTools "
                              f"convention (its branches: {sorted(branches)})")
    for name, branch in branches.items():
        if amptools is not None and name in RESERVED:
            continue
        typed.append((name, branch.typename, _numeric(branch.interpretation)))
        leaves[name] = (name, -1)
    schema = Schema.from_typed_columns(typed, where)
    return schema, leaves


def _check_counts(obj: Any, where: str, n_final: int, names: Sequence[str]) -> None:
    """Raise DataError naming the first entry whose ``NumFinalState`` is not ``n_final``."""
    counts = obj[COUNTER].array(library="np")
    bad = np.flatnonzero(counts != n_final)
    if bad.size:
        i = int(bad[0])
        raise DataError(
            f"entry {i} of {where} has {COUNTER} = {int(counts[i])}, but amptools={list(names)} "
            f"names {n_final} final-state particles ({bad.size} entries differ)"
        )


def _inspect(path: str, tree: str | None, amptools: Sequence[str] | None,
             fs: Any) -> tuple[_TreeInfo, Schema, dict[str, tuple[str, int]]]:
    with _uproot_errors(f"cannot read the metadata of {path}"), \
            _open(path, fs, tree) as (identity, name, obj):
        schema, leaves = _layout(path, name, obj, amptools)
        if amptools is not None:
            _check_counts(obj, f"{path}:{name}", len(amptools) - 1, amptools)
        read = schema.flat_columns() + ([WEIGHT_COLUMN] if schema.has_weight else [])
        branches = sorted({leaves[c][0] for c in read})  # the numbers a partition may read
        bounds = tuple(int(b) for b in obj.common_entry_offsets(filter_name=branches))
        return _TreeInfo(path, name, int(obj.num_entries), bounds, identity, fs), schema, leaves


# ----------------------------------------------------------------------------- partitions


@dataclass(frozen=True)
class RootPartition(Partition):
    """Entries ``start:start + n_events`` of one ROOT tree, read branch by branch.

    Every load checks that the file is still the one that was opened (its size,
    modification time and header, see :class:`~laddu_dask.data.identity.FileIdentity`).
    A four-vector component of an AmpTools tree is one position of a final-state array,
    whose length is checked in every entry read.
    """

    path: str
    tree: str
    start: int
    leaves: tuple[tuple[str, str, int], ...] = field(repr=False)  # (column, branch, index)
    schema: Schema = field(repr=False)
    identity: FileIdentity = field(repr=False)
    n_final: int = 0  # final-state particles of an AmpTools tree (0: laddu's convention)
    span: int = 0  # entries of the baskets covering the partition
    largest_basket: int = 0
    filesystem: Any = field(default=None, repr=False)

    @property
    def decoded_rows(self) -> int:
        """Entries of the largest basket read: each branch's baskets are decompressed whole."""
        return self.largest_basket

    @property
    def read_bytes(self) -> int:
        """Peak bytes a load holds besides the arrays it returns (one branch at a time)."""
        return READ_FIXED_BYTES + DECODE_BYTES_PER_ENTRY * max(self.n_final, 1) * self.span

    def load(self, columns: Sequence[str] | None = None, dtype: Any = np.float64) -> EventBatch:
        """Load the events (see :meth:`Partition.load`).

        Raises
        ------
        DataChangedError
            If the file changed on disk, or is gone, since it was opened (naming it).
        DataError
            If a branch cannot be read (naming the file, tree and branch), a final-state
            array has the wrong length (naming the entry), or a value is not finite.
        """
        return load_from_file(self, self.schema, columns, dtype, f"{self.path}:{self.tree}",
                              self._read)

    def _read(self, columns: list[str], dt: np.dtype) -> dict[str, np.ndarray]:
        """Check the file's identity, then read each branch of ``columns`` once (a
        final-state array for all the columns it holds)."""
        with _open(self.path, self.filesystem, self.tree, self.identity) as (_, _, obj):
            return self._fill(obj, columns, dt)

    def _fill(self, obj: Any, columns: list[str], dt: np.dtype) -> dict[str, np.ndarray]:
        by_branch: dict[str, list[tuple[str, int]]] = {}
        where = dict((c, (b, i)) for c, b, i in self.leaves)
        for c in columns:
            branch, index = where[c]
            by_branch.setdefault(branch, []).append((c, index))
        arrays: dict[str, np.ndarray] = {}
        for branch, wanted in by_branch.items():
            values = self._read_branch(obj, branch, jagged=wanted[0][1] >= 0)
            for c, index in wanted:
                raw = values if index < 0 else values[:, index]
                arrays[c] = cast_column(raw, dt, c, self.offset, self.source)
            del values  # free the branch before the next one
        return {c: arrays[c] for c in columns}

    def _read_branch(self, obj: Any, branch: str, jagged: bool) -> np.ndarray:
        """The partition's entries of ``branch``: ``(n,)``, or ``(n, n_final)`` for a jagged one."""
        stop = self.start + self.n_events
        with _uproot_errors(f"cannot read branch {branch!r} of {self.source}"):
            if not jagged:
                values = obj[branch].array(entry_start=self.start, entry_stop=stop, library="np")
            else:
                import awkward as ak

                array = obj[branch].array(entry_start=self.start, entry_stop=stop, library="ak")
                counts = ak.to_numpy(ak.num(array))
                bad = np.flatnonzero(counts != self.n_final)
                if bad.size:
                    i = int(bad[0])
                    raise DataError(
                        f"entry {self.start + i} (event {self.offset + i}) of "
                        f"{self.path}:{self.tree} has {int(counts[i])} values in branch "
                        f"{branch!r}, expected {self.n_final} final-state particles ({self.source})"
                    )
                values = ak.to_numpy(ak.flatten(array)).reshape(self.n_events, self.n_final)
        if len(values) != self.n_events:
            raise DataChangedError(f"{self.path}:{self.tree} changed since it was opened: expected "
                                   f"{self.n_events} entries at {self.source}, found {len(values)}")
        return values


def _cuts(n: int, boundaries: Sequence[int], chunk: int) -> list[tuple[int, int]]:
    """``(start, stop)`` pieces of at most ``chunk`` entries, each ending at the last basket
    boundary inside it, when the baskets are no larger than ``chunk`` (else cut at ``chunk``).

    Examples
    --------
    >>> _cuts(10, [0, 4, 8, 10], 6), _cuts(10, [0, 4, 8, 10], 3)
    ([(0, 4), (4, 10)], [(0, 3), (3, 6), (6, 9), (9, 10)])
    """
    if any(b - a > chunk for a, b in zip(boundaries, boundaries[1:])):
        return split_rows(n, chunk)
    pieces: list[tuple[int, int]] = []
    a = 0
    while a < n:
        b = a + chunk
        if b < n:
            k = bisect.bisect_right(boundaries, b) - 1
            if k >= 0 and boundaries[k] > a:
                b = boundaries[k]
        pieces.append((a, min(b, n)))
        a = min(b, n)
    return pieces


class RootOrigin:
    """ROOT trees with one schema; cuts each tree into partitions of entries."""

    has_blocks = False
    chosen_by_user = False

    def __init__(self, trees: Sequence[_TreeInfo], schema: Schema,
                 leaves: Mapping[str, tuple[str, int]], n_final: int = 0, selected: bool = False) -> None:
        self.trees = tuple(trees)
        self.schema = schema
        self.leaves = tuple((c, b, i) for c, (b, i) in leaves.items())
        self.n_final = n_final
        self.sources = tuple(t.path for t in self.trees)
        self.n_events = sum(t.n_entries for t in self.trees)
        self.token = "root-" + tokenize(
            [(t.path if t.filesystem is not None else os.path.abspath(t.path), t.tree,
              t.identity, t.n_entries) for t in self.trees], self.leaves, n_final,
            *((schema.p4s, schema.scalars, schema.has_weight) if selected else ()))

    def graph(self) -> None:
        return None

    def _partition(self, t: _TreeInfo, offset: int, a: int, b: int) -> RootPartition:
        bounds = t.boundaries
        first = max(bisect.bisect_right(bounds, a) - 1, 0)
        last = min(max(bisect.bisect_left(bounds, b), first + 1), len(bounds) - 1)
        covered = list(bounds[first:last + 1]) or [a, b]
        baskets = [y - x for x, y in zip(covered, covered[1:])] or [b - a]
        return RootPartition(
            n_events=b - a, offset=offset + a, source=f"{t.path}:{t.tree} [entries {a}:{b}]",
            path=t.path, tree=t.tree, start=a, leaves=self.leaves, schema=self.schema,
            identity=t.identity, n_final=self.n_final, span=covered[-1] - covered[0],
            largest_basket=max(baskets), filesystem=t.filesystem,
        )

    def make_partitions(self, chunk_size: int | None) -> tuple[Partition, ...]:
        assert chunk_size is not None
        parts: list[Partition] = []
        offset = 0
        for t in self.trees:
            parts.extend(self._partition(t, offset, a, b)
                         for a, b in _cuts(t.n_entries, t.boundaries, chunk_size))
            offset += t.n_entries
        if not parts:
            parts.append(self._partition(self.trees[0], 0, 0, 0))
        return tuple(parts)


# ----------------------------------------------------------------------------- API


def read_root(path: PathArg | Sequence[PathArg], tree: str | None = None, *,
              amptools: Sequence[str] | None = None, chunk_size: int | None = None,
              memory_policy: str | None = None,
              storage_options: Mapping[str, Any] | None = None,
              memory: MemoryBudget | int | str | None = None, cache: str | None = None,
              validate: bool = True, schema: Schema | None = None) -> Dataset:
    """Open ROOT TTrees lazily as a :class:`Dataset`, in laddu's branch names or AmpTools'.

    Only the trees' metadata are read now (and, for AmpTools, the ``NumFinalState``
    counts, to check them). Each file's identity (size, modification time, header) is
    recorded, and every later read checks it: a file rewritten on disk raises
    :class:`~laddu_dask.errors.DataChangedError`. Branches of floats, integers or booleans
    are numbers; others (fixed or variable-length arrays, strings, objects) are kept in the
    schema as not numeric, and a model that needs one is told its type.

    Parameters
    ----------
    path : path-like or sequence of path-like
        A file, a folder (every ``*.root`` in it, sorted), a glob pattern, or a list of
        these, as for :func:`~laddu_dask.data.parquet.read_parquet` (fsspec URLs too).
    tree : str, optional
        The TTree (``"dir/name"`` inside a directory); by default the first TTree of the
        first file, which every other file must then hold under the same name.
    amptools : sequence of str, optional
        Read the AmpTools convention: the names of the beam and of the final-state
        particles in the order of the ``*_FinalState`` arrays, e.g. ``["beam", "proton",
        "kshort1", "kshort2"]``. The weight comes from ``Weight`` (1 without it); other
        flat numeric branches are scalars under their own names.
    chunk_size : int, optional
        Maximum events per partition (default as for :func:`read_parquet`). When the
        tree's baskets are no larger, a partition ends at the last basket boundary within
        it, so that no basket is decompressed twice; it never spans two files.
    memory_policy : {"fastest", "resident", "disk", "streaming"}, optional
        laddu-dask's name of ``cache`` (an alias; give one or the other).
    storage_options : dict, optional
        Options of the fsspec filesystem of URLs.
    memory, cache, validate, schema
        laddu's keywords, as for :func:`~laddu_dask.data.parquet.read_parquet`.

    Raises
    ------
    FileNotFoundError
        A path or pattern matched no file.
    DataError
        A file is not ROOT or cannot be read, lacks the tree, or holds something else under
        its name (naming the file, the tree and the trees it has); for AmpTools, an entry
        whose ``NumFinalState`` differs from the number of final-state names (naming the
        file, tree and entry).
    SchemaError
        A missing or non-numeric branch of the AmpTools convention (naming the file, tree
        and branch), an incomplete four-vector, files with different columns, bad
        ``amptools`` names.
    ValueError
        Bad ``chunk_size``, ``cache`` or ``memory_policy`` (or both given, disagreeing).
    BudgetError
        A ``memory`` that is no size, or zero bytes.
    TypeError
        A keyword of the wrong type (naming it).

    Examples
    --------
    AmpTools files (``tests/data/test_root.py`` writes and reads such files)::

        ds = read_root("mc/*.root", tree="kin", amptools=["beam", "proton", "kshort1", "kshort2"])
    """
    if is_dask_collection(path):
        raise TypeError(f"read_root reads files; for a Dask collection ({type(path).__name__}) "
                        "use ld.Dataset.from_dask")
    policy = check_cache(cache, memory_policy)
    resolve_chunk_size(chunk_size)
    options = {"tree": tree, "amptools": amptools, "validate": validate, "schema": schema,
               "storage_options": storage_options}
    return Dataset(format_named("root")._bound(path, options, memory, policy, None, chunk_size))


def _open_root(path: PathArg | Sequence[PathArg], options: Mapping[str, Any] | None) -> RootOrigin:
    """The registered ``"root"`` format's reader (``options``: :func:`read_root`'s keywords)."""
    opts = reader_options(options, ("tree", "amptools", "validate", "schema", "storage_options"), "root")
    check_validate(opts.get("validate", True))
    tree, amptools = opts.get("tree"), opts.get("amptools")
    schema, storage_options = opts.get("schema"), opts.get("storage_options")
    if amptools is not None:
        amptools = check_names(amptools)
    files = expand_paths(path, storage_options, suffix=".root")
    infos: list[_TreeInfo] = []
    found: Schema | None = None
    leaves: dict[str, tuple[str, int]] = {}
    for p in files:
        fs = filesystem(p, storage_options)[0] if is_url(p) else None
        info, s, where = _inspect(p, tree if not infos else infos[0].tree, amptools, fs)
        if found is None:
            found, leaves = s, where
        else:
            check_same_columns(f"{infos[0].path}:{infos[0].tree}", found, f"{p}:{info.tree}", s)
        infos.append(info)
    assert found is not None
    n_final = 0 if amptools is None else len(amptools) - 1
    label = f"{infos[0].path}:{infos[0].tree}" + (f" (and {len(infos) - 1} more files)" if infos[1:] else "")
    selected = select_schema(found, schema, label)
    return RootOrigin(infos, selected, leaves, n_final, selected=schema is not None)


ROOT = register_format(FormatSpec._builtin("root", open=_open_root, write=write_root_format,
                                           extension="root"),
                       suffixes=(".root",))
"""laddu-dask's ROOT reader and writer (uproot), the registered format ``"root"``."""
