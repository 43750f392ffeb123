"""Every named choice of laddu-dask, declared once.

Devices, precisions, kernels, normalization modes, memory policies, schedulers, fit
methods and reduction transforms are string enums: pass the member (``ld.Kernel.FUSED``)
or its string (``"fused"``) alike. Each module that takes a choice checks it with
:meth:`Option.check`, and the batch-job schema and the command line take their lists of
choices from :meth:`Option.values`, so a new choice is added here and nowhere else.

Examples
--------
>>> Kernel.check("fused", "kernel")
'fused'
>>> Kernel.check(Kernel.NUMPY, "kernel")
'numpy'
>>> MemoryPolicy.values()
('resident', 'disk', 'streaming', 'fastest')
>>> Precision.check("f16", "precision")
Traceback (most recent call last):
...
ValueError: precision must be one of 'f64', 'f32', got 'f16'
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

__all__ = ["Autodiff", "Backend", "Device", "FitMethod", "Kernel", "MemoryPolicy", "Normalization", "Option",
           "Partitioning", "Precision", "Scheduler", "Transform"]


class Option(StrEnum):
    """A named choice: its members compare equal to their strings."""

    @classmethod
    def values(cls) -> tuple[str, ...]:
        """The allowed strings, in declaration order."""
        return tuple(m.value for m in cls)

    @classmethod
    def check(cls, value: Any, what: str) -> str:
        """``value`` as the plain string of its member.

        Raises
        ------
        ValueError
            If ``value`` is not one of :meth:`values`; the message names ``what`` and lists them.
        """
        try:
            return cls(value).value
        except (ValueError, TypeError):
            allowed = ", ".join(repr(v) for v in cls.values())
            raise ValueError(f"{what} must be one of {allowed}, got {value!r}") from None


class Device(Option):
    """Where evaluations run: ``"auto"`` takes a GPU when CuPy sees one."""

    CPU = "cpu"
    GPU = "gpu"
    AUTO = "auto"


class Backend(Option):
    """laddu's name for where and how evaluations run: ``"jit"`` is the CPU with fused kernels."""

    AUTO = "auto"
    CPU = "cpu"
    JIT = "jit"
    GPU = "gpu"


class Autodiff(Option):
    """laddu's differentiation modes; laddu-dask's gradients are exact reverse mode for all three."""

    AUTO = "auto"
    FORWARD = "forward"
    REVERSE = "reverse"


class Partitioning(Option):
    """laddu's MPI work split; laddu-dask's partitions are Dask's, and results do not depend on them."""

    AUTO = "auto"
    CONTIGUOUS = "contiguous"
    FILE_GROUPS = "file_groups"
    ROWS = "rows"


class Precision(Option):
    """Floating-point precision of the kernels and of stored columns."""

    F64 = "f64"
    F32 = "f32"


class Kernel(Option):
    """Which generated code evaluates a model: fused loops, array code, or the best available."""

    AUTO = "auto"
    FUSED = "fused"
    NUMPY = "numpy"


class Normalization(Option):
    """How the accepted-MC sum is computed: sufficient statistics where exact, the event loop, or both."""

    AUTO = "auto"
    GENERAL = "general"
    VERIFY = "verify"


class MemoryPolicy(Option):
    """Where a dataset's prepared partitions live: in memory, on the local disk (read back
    each evaluation), re-prepared from the source each evaluation, or the fastest of these
    the memory and disk budgets allow."""

    RESIDENT = "resident"
    DISK = "disk"
    STREAMING = "streaming"
    FASTEST = "fastest"


class Scheduler(Option):
    """Local evaluations: laddu-dask's persistent thread pool, or Dask's threaded scheduler."""

    POOL = "pool"
    DASK = "dask"


class FitMethod(Option):
    """Minimiser of :meth:`Likelihood.fit`: iminuit MIGRAD then HESSE, or laddu's default,
    L-BFGS-B then the covariance ``2 H^-1`` (what ``method=None`` runs)."""

    MIGRAD = "migrad"
    LBFGSB = "lbfgsb"


class HessianSource(Option):
    """Where MIGRAD's and HESSE's second derivatives come from: central differences of the
    exact gradient in one evaluation round, or Minuit's numerical ones from function values."""

    GRADIENT = "gradient"
    MINUIT = "minuit"


class Transform(Option):
    """What a reduction sums of each event: its real part, that part when positive, or its log."""

    REAL = "real"
    POSITIVE_REAL = "positive_real"
    LOG_POSITIVE_REAL = "log_positive_real"
