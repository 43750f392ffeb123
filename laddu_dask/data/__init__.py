"""Event data: schemas, event batches, partitioned datasets (Dask collections), Parquet and ROOT I/O.

Examples
--------
>>> import numpy as np
>>> from laddu_dask.data import Dataset
>>> Dataset.from_arrays(scalars={"x": np.arange(3.0)}).n_events
3
"""

from laddu_dask.data.arrays import ArrayPartition
from laddu_dask.data.batch import EventBatch, array_module
from laddu_dask.data.blocks import BlockPartition
from laddu_dask.data.checks import DEFAULT_CHUNK_SIZE, MEMORY_POLICIES
from laddu_dask.data.dataset import Dataset
from laddu_dask.data.histogram import Histogram
from laddu_dask.data.joint_histogram import JointHistogram, JointHistogramDiagnostics
from laddu_dask.data.operations import Bin, BinnedDataset, DatasetStats
from laddu_dask.data.parquet import ParquetPartition, read_parquet
from laddu_dask.data.parquet_writer import write_parquet
from laddu_dask.data.partition import Partition
from laddu_dask.data.root import RootPartition, read_root
from laddu_dask.data.root_writer import write_root
from laddu_dask.data.schema import P4_COMPONENTS, WEIGHT_COLUMN, Schema, p4_columns
from laddu_dask.data.sinks import ParquetSink, RootSink

__all__ = [
    "DEFAULT_CHUNK_SIZE",
    "MEMORY_POLICIES",
    "P4_COMPONENTS",
    "WEIGHT_COLUMN",
    "ArrayPartition",
    "Bin",
    "BinnedDataset",
    "BlockPartition",
    "Dataset",
    "DatasetStats",
    "EventBatch",
    "Histogram",
    "JointHistogram",
    "JointHistogramDiagnostics",
    "ParquetPartition",
    "ParquetSink",
    "Partition",
    "RootSink",
    "RootPartition",
    "Schema",
    "array_module",
    "p4_columns",
    "read_parquet",
    "read_root",
    "write_parquet",
    "write_root",
]
