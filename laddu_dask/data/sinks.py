"""laddu's file destinations: ``Dataset.write_to(ParquetSink(path))``, ``RootSink(path, tree=)``.

A sink says where and how a dataset is written; :meth:`Dataset.write_to
<laddu_dask.data.operations.DatasetOperations.write_to>` writes it (atomically, as
``write_parquet`` and ``write_root`` do).

Examples
--------
>>> import os, tempfile
>>> import numpy as np
>>> import laddu_dask as ld
>>> path = os.path.join(tempfile.mkdtemp(), "events.parquet")
>>> ld.Dataset.from_arrays(scalars={"x": np.arange(3.0)}).write_to(ld.ParquetSink(path, precision="f32"))
>>> ld.read_parquet(path).column("x").tolist()
[0.0, 1.0, 2.0]
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from laddu_dask.options import Precision

__all__ = ["ParquetSink", "RootSink"]


@dataclass(frozen=True)
class ParquetSink:
    """Write a dataset as one Parquet file (laddu's ``ParquetSink``), in ``precision``."""

    path: str | os.PathLike[str]
    precision: str = "f64"

    def __init__(self, path: str | os.PathLike[str], *, precision: str = "f64") -> None:
        object.__setattr__(self, "path", path)
        object.__setattr__(self, "precision", Precision.check(precision, "precision"))


@dataclass(frozen=True)
class RootSink:
    """Write a dataset as a ROOT TTree ``tree`` (laddu's ``RootSink``), in ``precision``."""

    path: str | os.PathLike[str]
    tree: str = "tree"
    precision: str = "f64"

    def __init__(self, path: str | os.PathLike[str], *, tree: str = "tree", precision: str = "f64") -> None:
        object.__setattr__(self, "path", path)
        object.__setattr__(self, "tree", tree)
        object.__setattr__(self, "precision", Precision.check(precision, "precision"))
