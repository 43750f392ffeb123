"""Per-partition reductions: the work of one task of an evaluation graph.

A :class:`PartitionReducer` turns one prepared partition and a parameter point into
exact partial sums (the *chunk* step), and the merged sums into a value and a
gradient (the *aggregate* step).  Two kernels serve it:

``"fused"``
    the generated Numba kernels of :mod:`laddu_dask.compile.fused`: one pass, no
    temporaries; the partials hold the value terms and the boundary adjoints, and
    the gradient is finished once per evaluation;
``"numpy"``
    the generated array code of :mod:`laddu_dask.compile.array_code` (also the path for
    CuPy arrays); the partials hold the value and every gradient component.

Until Numba has compiled the fused sum an evaluation needs (a background thread compiles
it, :meth:`PartitionReducer.compile_ahead`), the fused reducer evaluates with the model's
tier-0 kernel (:mod:`laddu_dask.compile.tier0`): the fused kernel's own per-event terms
computed by NumPy, summed exactly.  The results are the same bits, so only the time of
the first evaluations changes.

Examples
--------
>>> import numpy as np
>>> import laddu_dask as ld
>>> from laddu_dask.runtime.reducer import PartitionReducer
>>> cm = ld.CompiledModel.from_expr(ld.parameter("a") * ld.scalar("x"))
>>> PartitionReducer(cm, "f64", "numpy").kernel
'numpy'
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from laddu_dask import config
from laddu_dask.arrays import all_finite
from laddu_dask.compile.compiled import CompiledModel, real_dtype
from laddu_dask.compile.dtypes import complex_dtype
from laddu_dask.compile.graph import boundary
from laddu_dask.compile.plan import TRANSFORM_CODES, ReductionPlan, rejected_value_error
from laddu_dask.compile.point_code import backprop_sources
from laddu_dask.errors import NonFiniteError
from laddu_dask.expr.arrayfuncs import array_module
from laddu_dask.options import Kernel
from laddu_dask.runtime.accumulate import CertifiedPartials, Uncertified
from laddu_dask.runtime.compilations import numba_available, start_compilation
from laddu_dask.runtime.finite import finite_terms
from laddu_dask.runtime.partition import Params, PreparedPartition
from laddu_dask.runtime.point_programs import PointProgram, point_program
from laddu_dask.sums import ExactPartials

KERNELS = Kernel.values()


class PartitionReducer:
    """Chunk and aggregate steps of a weighted reduction of one compiled model.

    Parameters
    ----------
    compiled : CompiledModel
        The model.
    precision : {"f64", "f32"}
        Kernel arithmetic.
    kernel : {"auto", "fused", "numpy"}
        ``"auto"`` takes the fused kernels when Numba is installed and the model has a
        per-event, parameter-dependent part.
    """

    def __init__(self, compiled: CompiledModel, precision: str, kernel: str = "auto",
                 device: str = "cpu", gpu: int = 0) -> None:
        kernel = Kernel.check(kernel, "kernel")
        real_dtype(precision)
        mixed_root = compiled.split.root.serial in {n.serial for n in compiled.split.mixed_nodes}
        self.compiled = compiled
        self.precision = precision
        self.device = device
        self.gpu = gpu
        self.fused = None
        self.cuda = None
        self._ready = [False, False]  # the fused sum (value, value+gradient) is compiled
        self._compiling: list[threading.Thread | None] = [None, None]
        self._tier0: Any = False  # not built yet (None: the model has none)
        self._backprop: Any = False  # the backprop's point program (None: the NumPy code)
        #: Whether evaluations before the fused kernel is ready run the tier-0 kernel (and the
        #: compilation a child process); a reducer rebuilt on a cluster worker compiles in the
        #: evaluation instead, as its worker process may be retired while a child compiles.
        self.interim = True
        self._lock = threading.Lock()
        if device == "gpu":
            # generated CUDA kernels; the array code (on CuPy) when nothing is per event
            self.kernel = "cuda" if (mixed_root and kernel != "numpy") else "numpy"
            if self.kernel == "cuda":
                from laddu_dask.runtime.cuda_backend import cuda_kernels

                self.cuda = cuda_kernels(compiled.split, precision)
            return
        if kernel == "auto":
            kernel = "fused" if (mixed_root and numba_available()) else "numpy"
        if kernel == "fused" and not mixed_root:
            kernel = "numpy"  # nothing per event depends on parameters: nothing to fuse
        self.kernel = kernel
        if kernel == "fused":
            from laddu_dask.compile.fused import fused_kernels

            self.fused = fused_kernels(compiled.split, precision)

    def compile_ahead(self, with_gradient: bool, label: str,
                      notify: Callable[[str], None] | None = None) -> threading.Thread | None:
        """Start compiling, on a background thread, the fused sum the first evaluation
        will call, so that Numba compiles while the datasets are prepared.

        Until it is done, evaluations run the tier-0 kernel (the same terms, the same
        bits); a model without one waits for it (Numba's compiler lock) and then runs the
        same machine code: nothing but the timing changes.  When the compilation takes
        more than a second, ``notify`` gets a line when it passes one second and one
        when it ends.  A failure is left to the evaluation's call, which raises it.
        Returns the thread (the one already started, if any), or ``None`` when there is
        nothing to compile.
        """
        if self.fused is None or self._is_ready(with_gradient):
            return None
        with self._lock:
            thread = self._compiling[with_gradient]
            if thread is not None:
                return thread
            # started under the lock: a caller handed this thread may join it at once
            thread = self._compiling[with_gradient] = start_compilation(threading.Thread(
                target=self._compile, args=(with_gradient, label, notify),
                name="laddu-dask-compile", daemon=True))
        return thread

    def wait_compiled(self, timeout: float | None = None) -> bool:
        """Wait for the fused kernels' background compilations; ``True`` when none is left
        running (``timeout`` seconds at most for each)."""
        for thread in list(self._compiling):
            if thread is not None:
                thread.join(timeout)
        return not any(t is not None and t.is_alive() for t in self._compiling)

    def _is_ready(self, with_gradient: bool) -> bool:
        """Whether the fused sum is compiled (Numba's dispatcher holds the signature)."""
        if not self._ready[with_gradient]:
            fused = self.fused
            fn = fused.gradient_sum if with_gradient else fused.value_sum
            self._ready[with_gradient] = fused.signature(with_gradient) in fn.overloads
        return self._ready[with_gradient]

    def _compile(self, with_gradient: bool, label: str,
                 notify: Callable[[str], None] | None) -> None:
        fused = self.fused
        start = time.perf_counter()
        what = f"the fused {'value+gradient' if with_gradient else 'value'} kernel of {label}"
        timer = threading.Timer(1.0, notify, [f"compiling {what}..."]) if notify else None
        if timer is not None:
            timer.daemon = True
            timer.start()
        try:
            if (self.interim and config.get("tier0") and self.tier0() is not None
                    and not fused.on_disk(with_gradient)):
                # evaluations run meanwhile: compile in a child, then load its machine code
                from laddu_dask.compile.precompile import compile_in_child

                compile_in_child(fused, with_gradient)
            compiled = fused.compile_ahead(with_gradient)
        except Exception:  # noqa: BLE001 - the evaluation's own call raises it
            compiled = False
        finally:
            if timer is not None:
                timer.cancel()
        elapsed = time.perf_counter() - start
        if compiled and notify is not None and elapsed > 1.0:
            notify(f"compiled {what} in {elapsed:.1f} s")

    def __reduce__(self):  # rebuilt on a worker from the expression (kernels load from disk)
        kernel = "auto" if self.kernel == "cuda" else self.kernel
        return (_rebuild, (self.compiled.model.expr, self.precision, kernel, self.device, self.gpu))

    def device_context(self) -> Any:
        """A context selecting this reducer's GPU (a no-op on the CPU)."""
        if self.device != "gpu":
            import contextlib

            return contextlib.nullcontext()
        import cupy

        return cupy.cuda.Device(self.gpu)

    @property
    def n_params(self) -> int:
        """Free parameters."""
        return len(self.compiled.parameter_names)

    # -- chunk ---------------------------------------------------------------------------
    def partials(self, part: PreparedPartition, params: Params, plan: ReductionPlan,
                 with_gradient: bool, exact: bool = False) -> CertifiedPartials:
        """Partial sums over one partition (exact, or fast with a certified bound)."""
        if self.fused is not None and isinstance(part.weights, np.ndarray):
            return self._fused(part, params, plan, with_gradient, exact)
        if self.cuda is not None and not isinstance(part.weights, np.ndarray):
            with self.device_context():
                return self._cuda(part, params, plan, with_gradient, exact)
        with self.device_context():
            return CertifiedPartials.exact(self._numpy(part, params, plan, with_gradient))

    def _cuda(self, part: PreparedPartition, params: Params, plan: ReductionPlan,
              with_gradient: bool, exact: bool) -> CertifiedPartials:
        ck = self.cuda
        if exact:
            def terms(p: PreparedPartition) -> Any:
                out, index, value = ck.terms(p.cache, p.weights, params.array, plan.transform,
                                             with_gradient)
                if index >= 0:
                    raise rejected_value_error(value, p.offset + index, p.source, plan.transform)
                return out.get()

            return CertifiedPartials.exact(finite_terms(terms(part), part, terms))
        gp = ck.reduce(part.cache, part.weights, params.array, plan.transform, with_gradient)
        if gp.bad_index >= 0:
            raise rejected_value_error(gp.bad_value, part.offset + gp.bad_index, part.source,
                                       plan.transform)
        return CertifiedPartials(gp.terms, gp.bound)

    def rows(self, with_gradient: bool) -> int:
        """How many sums one partition returns."""
        if not with_gradient:
            return 1
        if self.fused is not None:
            return 1 + self.fused.boundary_size
        if self.cuda is not None:
            return 1 + self.cuda.boundary_size
        return 1 + self.n_params

    def tier0(self) -> Callable[..., tuple] | None:
        """The model's tier-0 kernel (built on first use), or ``None`` when it has none."""
        if self._tier0 is False:
            from laddu_dask.compile.tier0 import tier0_kernel

            self._tier0 = tier0_kernel(self.compiled.split, self.precision)
        return self._tier0

    def backprop_program(self) -> PointProgram | None:
        """The fused kernels' backprop as a :class:`PointProgram` (Numba once compiled, its
        tier-0 twin until then), or ``None`` when it has no tier-0 form (the NumPy backprop
        serves then)."""
        if self._backprop is False:
            split = self.compiled.split
            self._backprop = point_program(backprop_sources(split, boundary(split)))
        return self._backprop

    def _interim(self, part: PreparedPartition, params: Params, plan: ReductionPlan,
                 with_gradient: bool) -> np.ndarray | None:
        """The fused kernel's per-event rows from the tier-0 kernel while the fused sum
        compiles; ``None`` when the fused kernel is to be called (it is ready, its machine
        code is on disk and loading, its compilation failed, the model has no tier-0
        kernel, or Numba would raise)."""
        thread = self.compile_ahead(with_gradient, "the model")
        if thread is None or not thread.is_alive() or not self.interim or not config.get("tier0"):
            return None
        t0 = self.tier0()
        if t0 is None or self.fused.on_disk(with_gradient):
            return None  # no tier-0 kernel, or the thread loads machine code: wait for it
        from laddu_dask.compile.tier0_prelude import Tier0Fallback

        try:
            return self._tier0_terms(part, params, plan, with_gradient)
        except Tier0Fallback:
            return None

    def _tier0_terms(self, part: PreparedPartition, params: Params, plan: ReductionPlan,
                     with_gradient: bool) -> np.ndarray:
        """The tier-0 kernel's per-event rows (it raises ``Tier0Fallback`` where Numba would)."""
        with np.errstate(all="ignore"):
            out, index, value = self.tier0()(*part.cache, part.weights, params.array,
                                             TRANSFORM_CODES[plan.transform], with_gradient)
        if index >= 0:
            raise rejected_value_error(value, part.offset + index, part.source, plan.transform)
        return out

    def _fused(self, part: PreparedPartition, params: Params, plan: ReductionPlan,
               with_gradient: bool, exact: bool) -> CertifiedPartials:
        fk = self.fused
        rows = self.rows(with_gradient)
        code = TRANSFORM_CODES[plan.transform]
        if self.interim and not self._ready[with_gradient] and not self._is_ready(with_gradient):
            out = self._interim(part, params, plan, with_gradient)
            if out is not None:
                def redo(p: PreparedPartition) -> np.ndarray:
                    return self._tier0_terms(p, params, plan, with_gradient)

                return CertifiedPartials.exact(finite_terms(out, part, redo))
        bad = np.zeros(1)
        if exact:
            def terms(p: PreparedPartition) -> np.ndarray:
                out = np.zeros((rows, p.n))
                fn = fk.gradient_terms if with_gradient else fk.value_terms
                index = fn(*p.cache, p.weights, params.array, code, out, bad)
                if index >= 0:
                    raise rejected_value_error(float(bad[0]), p.offset + index, p.source,
                                               plan.transform)
                return out

            return CertifiedPartials.exact(finite_terms(terms(part), part, terms))
        acc = np.zeros((rows, 5))
        fn = fk.gradient_sum if with_gradient else fk.value_sum
        index = fn(*part.cache, part.weights, params.array, code, acc, bad)
        if index >= 0:
            raise rejected_value_error(float(bad[0]), part.offset + index, part.source,
                                       plan.transform)
        return CertifiedPartials(acc[:, :4], acc[:, 4])  # views of this call's own buffer

    def _numpy(self, part: PreparedPartition, params: Params, plan: ReductionPlan,
               with_gradient: bool) -> ExactPartials:
        def rows(p: PreparedPartition) -> Any:
            return self._numpy_rows(p, params, plan, with_gradient)

        return finite_terms(rows(part), part, rows)

    def _numpy_rows(self, part: PreparedPartition, params: Params, plan: ReductionPlan,
                    with_gradient: bool) -> Any:
        """The array code's per-event rows (value terms, then every gradient component)."""
        compiled, p = self.compiled, params.values
        if not with_gradient:
            value = compiled.values(part.cache, p, part.n)
            real = array_module(value).real(value)
            with np.errstate(all="ignore"):
                return plan.terms(real, part.weights, offset=part.offset, source=part.source)

        def seed(value: Any) -> Any:
            real = array_module(value).real(value)
            plan.check(real, offset=part.offset, source=part.source)
            return plan.seed(real, part.weights)

        value, grads = compiled.values_and_vjp(part.cache, p, seed, part.n)
        xp = array_module(value)
        real = xp.real(value)
        with np.errstate(all="ignore"):
            terms = plan.terms(real, part.weights, offset=part.offset, source=part.source)
        return xp.stack([terms, *grads]) if grads else terms[None, :]

    def empty(self, with_gradient: bool) -> CertifiedPartials:
        """Partials of an empty reduction."""
        rows = self.rows(with_gradient)
        return CertifiedPartials(np.zeros((rows, 1)), np.zeros(rows))

    def values(self, part: PreparedPartition, params: Params) -> Any:
        """The model value of every event of a prepared partition (the reduction's kernel)."""
        if self.fused is not None and isinstance(part.weights, np.ndarray):
            dt = real_dtype(self.precision)
            if self.compiled.split.root.kind == "complex":
                dt = complex_dtype(dt)
            out = np.empty(part.n, dtype=dt)
            self.fused.values(*part.cache, params.array, out)
            return out
        with self.device_context():
            if self.cuda is not None and not isinstance(part.weights, np.ndarray):
                return self.cuda.values(part.cache, params.array, part.n)
            return self.compiled.values(part.cache, params.values, part.n)

    # -- aggregate -------------------------------------------------------------------------
    def finish(self, merged: CertifiedPartials, params: Params, with_gradient: bool,
               label: str = "the events") -> tuple[float, np.ndarray | None]:
        """Value (and gradient) from the merged partial sums (raises :class:`Uncertified`):
        :meth:`finish_points` at one point.

        Raises
        ------
        NonFiniteError
            The sum (of finite terms) or a gradient component overflows the float range;
            ``label`` names the dataset in the message.
        """
        out = self.finish_points([merged], [params], with_gradient, label)[0]
        if isinstance(out, Uncertified):
            raise out
        return out

    def finish_points(self, merged: list[CertifiedPartials], points: list[Params], with_gradient: bool,
                      label: str = "the events") -> list[Any]:
        """:meth:`finish` at every point of a round: ``(value, gradient)`` per point, or the
        :class:`Uncertified` of a point whose fast sums could not be certified (to redo
        exactly); the fused kernels' backprop runs once for all the points."""
        out: list[Any] = []
        done: list[int] = []
        totals: list[np.ndarray] = []
        for k, m in enumerate(merged):
            try:
                t = m.certified_floats()
            except Uncertified as exc:
                out.append(exc)
                continue
            value = float(t[0])
            if not math.isfinite(value):
                raise NonFiniteError(
                    f"the sum of the per-event terms over {label} is {value!r}: it overflows the "
                    "float range"
                )
            out.append((value, None))
            done.append(k)
            totals.append(t)
        if not with_gradient or not done:
            return out
        if self.fused is not None:
            p64 = np.ascontiguousarray(np.array([points[k].array for k in done], dtype=np.float64).T)
            adjoints = np.ascontiguousarray(np.array([t[1:] for t in totals], dtype=np.float64).T)
            program = self.backprop_program()
            with np.errstate(all="ignore"):
                grads = None
                if program is not None:
                    try:
                        grads = np.empty(p64.shape)
                        program.run("backprop_points", p64, adjoints, grads)
                        grads = grads.T
                    except ZeroDivisionError:  # Numba's complex division by zero: NumPy's inf
                        grads = None
                if grads is None:
                    grads = np.asarray(self.fused.backprop(p64, adjoints), dtype=np.float64).T
        elif self.cuda is not None:
            with np.errstate(all="ignore"):
                grads = [np.asarray(self.cuda.backprop(points[k].array.astype(np.float64), t[1:]),
                                    dtype=np.float64) for k, t in zip(done, totals, strict=True)]
        else:
            grads = [np.array(t[1:], dtype=np.float64) for t in totals]
        for k, grad in zip(done, grads, strict=True):
            if not all_finite(grad):
                j = int(np.argmin(np.isfinite(grad)))
                raise NonFiniteError(
                    f"the gradient of the sum over {label} is {grad[j]!r} in parameter "
                    f"{self.compiled.parameter_names[j]!r}: either the model's derivative is not finite "
                    "at this point (a square root, power or log at zero, a pole), or an intermediate "
                    "overflows the float range (the likelihood's gradient may itself be finite: an "
                    "NLL's gradient does not change when the accepted MC's weights are all scaled down "
                    "by one factor)"
                )
            out[k] = (out[k][0], np.ascontiguousarray(grad))
        return out


def _rebuild(expr: Any, precision: str, kernel: str, device: str = "cpu",
             gpu: int = 0) -> PartitionReducer:
    reducer = PartitionReducer(CompiledModel.from_expr(expr), precision, kernel, device, gpu)
    reducer.interim = False  # on a cluster worker: compiled in the evaluation
    return reducer
