"""Exception types raised by laddu-dask.

Every error a user can cause derives from :class:`LadduDaskError` and from the
built-in exception a Python user would expect (``ValueError``, ``KeyError``,
``MemoryError``), so ``except ValueError`` keeps working.

Examples
--------
>>> import laddu_dask as ld
>>> issubclass(ld.SchemaError, ValueError)
True
"""

from __future__ import annotations


class LadduDaskError(Exception):
    """Base class of every error raised on purpose by laddu-dask."""


class SchemaError(LadduDaskError, ValueError):
    """A dataset lacks a column a model needs, or its columns are malformed."""


class DataError(LadduDaskError, ValueError):
    """Event data are invalid: unequal lengths, non-finite values, unreadable files."""


class ParameterError(LadduDaskError, ValueError):
    """A parameter is unknown, defined twice inconsistently, or given a bad value."""


class ModelError(LadduDaskError, ValueError):
    """An expression cannot be built or compiled (bad quantum numbers, bad types)."""


class NonPositiveIntensityError(LadduDaskError, ValueError):
    """A non-positive value entered a logarithm or a positive-only reduction."""


class NormalizationError(LadduDaskError, ValueError):
    """A normalization integral is zero or not finite."""


class BudgetError(LadduDaskError, MemoryError):
    """A memory budget is malformed or too small for the requested work."""


class NonFiniteError(LadduDaskError, ValueError):
    """An intensity, a per-event term or a sum of a likelihood is infinite or NaN."""


class DataChangedError(DataError):
    """A file changed on disk (size, modification time or Parquet footer) after it was opened."""


class ClusterError(LadduDaskError, RuntimeError):
    """The Dask cluster could not do the work: its scheduler is gone, or its workers are."""


class SchedulerLostError(ClusterError):
    """The Dask scheduler cannot be reached any more."""


class ClusterTimeoutError(ClusterError, TimeoutError):
    """A wait on the cluster (for workers, a preparation, an evaluation) ran past its timeout."""


class UnsafeOutputError(LadduDaskError, FileExistsError):
    """An output path would replace something laddu-dask did not write: a folder holding
    other files, the working folder or a parent of it, or an input being read."""


class KernelCacheError(LadduDaskError, PermissionError):
    """The kernel cache folder is unsafe (writable by others) or cannot be written."""


class DiskTierError(LadduDaskError, PermissionError):
    """The disk tier's folder is unsafe (writable by others) or cannot be written, or a
    prepared partition cannot be kept there."""


class GenerationError(LadduDaskError, RuntimeError):
    """Monte Carlo generation could not finish: a weight exceeded the unweighting envelope,
    or the proposal limit was reached."""


class ClosureError(LadduDaskError, RuntimeError):
    """A closure study cannot give pull statistics: fewer than two of its replicas were
    fitted validly."""


class GaneshError(LadduDaskError):
    """A minimizer of :mod:`laddu_dask.ganesh` cannot run as asked (laddu's ``GaneshError``)."""


class GaneshConfigError(GaneshError, ValueError):
    """A ``ganesh`` configuration, terminator or transform was given a value it cannot take
    (laddu's ``GaneshConfigError``); the message names the keyword."""


class RestartWarning(UserWarning):
    """Many fits that should start from different points start from the same one: restarts
    of parameters without a starting range (``initial=(minimum, maximum)``)."""


class FitArtifactError(LadduDaskError, ValueError):
    """A fit artifact or analysis snapshot cannot be read (the message names the file and
    field), or does not fit the likelihood it is bound to (laddu's "fit artifact mismatch")."""
