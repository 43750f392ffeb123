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
