"""The CUDA printer: one pass over a partition on the GPU per evaluation.

From the same split graph as the CPU fused kernels (:mod:`laddu_dask.compile.fused`)
this module prints CUDA C++ source (the operations in the CUDA spellings of the spec,
:mod:`laddu_dask.expr.ops`, below the prelude ``cuda_prelude.cuh``), compiled at run
time by CuPy (``cupy.RawModule``, NVRTC: the launcher is
:mod:`laddu_dask.runtime.cuda_backend`) or ahead of time by ``nvcc``
(:func:`compile_with_nvcc`, used by the tests so that a syntax or type error fails
without a GPU).

Kernels (``PREFIX`` is empty unless several models share one translation unit):

``PREFIXvalue_sum`` / ``PREFIXgradient_sum``
    a grid-stride loop over events: the parameter-dependent part of the model, the
    reduction transform ``w t(Re v)`` and, for the gradient, one reverse sweep that
    yields the adjoints of the *boundary* nodes (the parameter-only values the
    per-event part reads; the same rows as the CPU fused kernels).  Each thread
    accumulates its terms with TwoSum in double precision (also in ``f32`` mode),
    each block merges its threads' (sum, compensation) pairs in shared memory and
    writes one (sum, compensation, magnitude) triple per row;
``laddu_merge_blocks``
    merges the block triples of every row the same way and returns ``3 K + 1``
    doubles: per row the (sum, compensation) pair and an error bound, then the first
    event whose value is not finite or a positive transform rejected (or ``-1``);
``PREFIXvalue_terms`` / ``PREFIXgradient_terms``
    the same per-event terms written out (``K x n`` doubles), the exact fallback;
``PREFIXvalues``
    the model value per event.

Design
------
* Cached columns are separate device arrays; a complex column is interleaved
  (re, im) pairs, exactly CuPy's ``complex128``/``complex64`` layout, read as a
  16-byte (8-byte in ``f32``) aligned struct ``cplx``.  Free parameters are passed
  by value as kernel arguments (no host-to-device copy per call); parameter-only
  nodes are recomputed by every thread (they are few and cheap).
* Complex arithmetic is a small struct with overloaded operators and inline
  functions (``ld_exp``, ``ld_log``, ``ld_pow``, ...), so one CUDA spelling of an
  operation serves real and complex operands, in the forward pass and in the derivative
  rules alike.  Complex division takes one reciprocal, as the CPU fused kernels do.
  Constants are exact hexadecimal literals.
* The kernels are compiled with ``--fmad=false`` by default, so products and sums
  round exactly as in the CPU kernels.
* Sums are certified like the CPU ones.  Each thread keeps a two-level expansion
  ``(s, c)`` updated by TwoSum at both levels (exact); the remainder the second level
  drops is exactly known and its magnitude is summed, rounding upwards
  (``__dadd_ru``), into ``bound``; block and grid merges do the same.  So
  ``exact sum in [s + c - bound, s + c + bound]``, with ``bound == 0`` whenever no
  second-level addition rounded (typical for ``f32`` terms, whose exact sums often
  fall on a rounding tie).  The runtime's ``CertifiedPartials(terms, bound)`` takes
  the pairs as exact terms; an evaluation whose bound straddles a rounding boundary
  (or that is not finite) is redone exactly from the per-event terms.

Examples
--------
>>> import laddu_dask as ld
>>> from laddu_dask.compile.cuda import generate_cuda_source
>>> cm = ld.CompiledModel.from_expr((ld.parameter("a") * ld.scalar("x") + 1.0).norm_sqr())
>>> src = generate_cuda_source(cm.split, "f64")
>>> src.kernels["gradient_sum"], src.rows
('gradient_sum', 2)
>>> "0x1p+0" in src.text
True
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from laddu_dask.compile.graph import Split, boundary_rows
from laddu_dask.compile.sweep import Printer
from laddu_dask.errors import LadduDaskError, ParameterError
from laddu_dask.expr.node import Expr
from laddu_dask.expr.ops import COMPLEX, SPEC
from laddu_dask.options import Precision

__all__ = [
    "DEFAULT_OPTIONS",
    "MAX_BLOCK",
    "MERGE_KERNEL",
    "ROLES",
    "CudaCompileError",
    "CudaPrinter",
    "CudaSource",
    "combine_sources",
    "compile_with_nvcc",
    "generate_cuda_source",
    "prelude",
    "real_literal",
]

#: Largest block the kernels are compiled for (``__launch_bounds__``): up to 255
#: registers per thread stay available to models with many gradient rows.
MAX_BLOCK = 256

#: Compiler options shared by NVRTC (CuPy) and nvcc: C++17 (hex float literals) and
#: no contraction of products and sums into fused multiply-adds.
DEFAULT_OPTIONS = ("--std=c++17", "--fmad=false")

#: Kernel roles of a model (the merge kernel is shared: :data:`MERGE_KERNEL`).
ROLES = ("value_sum", "gradient_sum", "value_terms", "gradient_terms", "values")
MERGE_KERNEL = "laddu_merge_blocks"

#: Most free parameters passed by value (32 KiB of kernel arguments on sm_70+).
MAX_PARAMS = 2048


class CudaCompileError(LadduDaskError, RuntimeError):
    """nvcc (or NVRTC) rejected generated CUDA source; the message holds its log."""



# ---------------------------------------------------------------------------------------
# literals and the prelude
# ---------------------------------------------------------------------------------------
def _hex(x: float) -> str:
    """Shortest exact hexadecimal spelling of a finite double."""
    h = float(x).hex()  # e.g. -0x1.8000000000000p+3
    sign = "-" if h.startswith("-") else ""
    mant, exp = h.lstrip("-").split("p")
    mant = mant.rstrip("0").rstrip(".")
    return f"{sign}{mant}p{exp}"


def real_literal(x: float, f32: bool) -> str:
    """An exact C++ literal of ``x`` (rounded to float32 first in ``f32`` mode).

    Examples
    --------
    >>> real_literal(1.5, False), real_literal(-0.1, True)
    ('0x1.8p+0', '(-0x1.99999ap-4f)')
    """
    v = float(np.float32(x)) if f32 else float(x)
    if v != v:
        return "ld_nan()"
    if v in (float("inf"), float("-inf")):
        return "ld_inf()" if v > 0 else "(-ld_inf())"
    text = _hex(v) + ("f" if f32 else "")
    return f"({text})" if text.startswith("-") else text


def complex_literal(z: complex, f32: bool) -> str:
    return f"ld_c({real_literal(z.real, f32)}, {real_literal(z.imag, f32)})"


#: The prelude's text (``cuda_prelude.cuh``).
PRELUDE = (Path(__file__).parent / "cuda_prelude.cuh").read_text()


def prelude(precision: str) -> str:
    """The head of a translation unit of one precision: the prelude, set to it."""
    flag = "#define LADDU_F32 1\n" if precision == "f32" else ""
    return f"// laddu-dask generated CUDA kernels, precision {precision}\n{flag}{PRELUDE}"


class CudaPrinter(Printer):
    """CUDA C++: the spec's CUDA spellings, constants as exact literals.

    Parameters
    ----------
    nodes : sequence of Expr
        The graph in topological order.
    f32 : bool
        Single-precision literals.
    head : set of int
        Serials of the nodes read from the per-thread head struct ``h`` (per-event code).
    """

    backend = "CUDA"

    def __init__(self, nodes: Sequence[Expr], f32: bool, head: frozenset[int] = frozenset()) -> None:
        super().__init__(nodes)
        self.f32 = f32
        self.head = head

    def name(self, node: Expr) -> str:
        text = super().name(node)
        return f"h.{text}" if node.serial in self.head else text

    def constant(self, node: Expr) -> str:
        return self.number(complex(node.attr) if node.kind == COMPLEX else node.attr)

    def number(self, value: int | float | complex) -> str:
        if isinstance(value, complex):
            return complex_literal(value, self.f32)
        return real_literal(float(value), self.f32)

    def form(self, op: str, kinds: tuple[str, ...], forward: bool) -> str | None:
        return SPEC[op].cuda_form(kinds)

    @staticmethod
    def ctype(node: Expr) -> str:
        """The C type of a node's value."""
        return "cplx" if node.kind == COMPLEX else "real_t"

    def assign(self, node: Expr, indent: str = "    ") -> str:
        return f"{indent}const {self.ctype(node)} {self.name(node)} = {self.value(node)};"

    def accumulate(self, arg: Expr, target: str, src: str, kind: str, first: bool) -> str:
        # every contribution takes its argument's type
        expr = self.apply("to_complex" if arg.kind == COMPLEX else "real", [src], [kind])
        return (f"    {self.ctype(arg)} {target} = {expr};" if first
                else f"    {target} = {target} + {expr};")


# ---------------------------------------------------------------------------------------
# the printed source
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class CudaSource:
    """Generated CUDA source of one model at one precision.

    Attributes
    ----------
    precision : {"f64", "f32"}
        Arithmetic of the model (sums are always accumulated in double).
    prefix : str
        Prefix of every kernel and helper name of the model.
    prelude : str
        Shared definitions (complex struct, functions, sums, the merge kernel).
    body : str
        The model's head, per-event functions and kernels.
    kernels : dict
        Role (:data:`ROLES` and ``"merge"``) -> kernel name.
    boundary : tuple of Expr
        Boundary nodes, in the order of :func:`laddu_dask.compile.fused.boundary_rows`.
    boundary_rows : tuple of int
        First row of each boundary node's adjoint sum (complex nodes take two rows).
    rows : int
        Rows of ``gradient_sum`` (``1 + boundary size``); ``value_sum`` has one.
    cache_kinds : tuple of str
        Kind of each cached column argument (``"real"`` or ``"complex"``).
    n_params : int
        Free parameters, passed by value after the other arguments.
    root_kind : str
        Kind of the model value (the ``values`` output).
    """

    precision: str
    prefix: str
    prelude: str
    body: str
    kernels: dict[str, str]
    boundary: tuple[Expr, ...]
    boundary_rows: tuple[int, ...]
    rows: int
    cache_kinds: tuple[str, ...]
    n_params: int
    root_kind: str
    digest: str = field(default="", compare=False)

    @property
    def text(self) -> str:
        """The whole translation unit."""
        return self.prelude + "\n" + self.body

    @property
    def boundary_size(self) -> int:
        """Rows of boundary adjoint sums."""
        return self.rows - 1


def combine_sources(sources: Sequence[CudaSource]) -> str:
    """One translation unit for several models of one precision (distinct prefixes)."""
    if not sources:
        raise ValueError("no CUDA sources to combine")
    precisions = {s.precision for s in sources}
    prefixes = [s.prefix for s in sources]
    if len(precisions) != 1:
        raise ValueError(f"cannot combine sources of precisions {sorted(precisions)}")
    if len(set(prefixes)) != len(prefixes):
        raise ValueError(f"combined CUDA sources need distinct prefixes, got {prefixes}")
    return sources[0].prelude + "\n" + "\n".join(s.body for s in sources)


def generate_cuda_source(split: Split, precision: str = "f64", prefix: str = "") -> CudaSource:
    """Generate the CUDA kernels of a split model.

    Parameters
    ----------
    split : Split
        The classified graph (``CompiledModel.split``); its root must depend on events
        and on free parameters, as for the CPU fused kernels.
    precision : {"f64", "f32"}
        Arithmetic of the per-event part.
    prefix : str
        Prefix of the model's kernel and helper names (a C identifier start), so that
        several models can share one translation unit (:func:`combine_sources`).

    Examples
    --------
    >>> import laddu_dask as ld
    >>> x, a = ld.scalar("x"), ld.parameter("a")
    >>> split = ld.CompiledModel.from_expr((a * x).exp().real()).split
    >>> src = generate_cuda_source(split, "f32", prefix="m0_")
    >>> src.kernels["values"], src.cache_kinds, src.n_params
    ('m0_values', ('real',), 1)
    """
    precision = Precision.check(precision, "precision")
    if prefix and (not prefix.replace("_", "a").isalnum() or prefix[0].isdigit()):
        raise ValueError(f"prefix must be a C identifier start, got {prefix!r}")
    mixed = {n.serial for n in split.mixed_nodes}
    if split.root.serial not in mixed:
        raise ValueError("CUDA kernels need a root that depends on events and parameters")
    if len(split.free) > MAX_PARAMS:
        raise ParameterError(f"the CUDA kernels take at most {MAX_PARAMS} free parameters, "
                             f"the model has {len(split.free)}")
    f32 = precision == "f32"
    head_nodes = [*split.free, *split.param_nodes]
    in_head = frozenset(n.serial for n in head_nodes)
    boundary, b_rows, rows = boundary_rows(split)
    P = prefix
    hp = CudaPrinter(split.nodes, f32)  # the head function
    ev = CudaPrinter(split.nodes, f32, in_head)  # per-event code: head values from ``h``
    ctype = CudaPrinter.ctype

    # -- head: free parameters and parameter-only nodes, per thread ------------------------
    head_struct = [f"struct {P}LdHead {{"]
    head_struct += [f"    {ctype(b)} {hp.name(b)};" for b in boundary] or ["    int unused;"]
    head_struct.append("};")
    head_fn = [f"LD_FN {P}LdHead {P}ld_head(const real_t* p) {{"]
    free_pos = {n.serial: j for j, n in enumerate(split.free)}
    head_fn += [f"    const real_t {hp.name(n)} = p[{free_pos[n.serial]}];" for n in split.free]
    head_fn += hp.forward(split.param_nodes)
    head_fn.append(f"    {P}LdHead h;")
    head_fn += [f"    h.{hp.name(b)} = {hp.name(b)};" for b in boundary]
    head_fn += ["    return h;", "}"]

    # -- per-event pieces ----------------------------------------------------------------
    col_params = [
        f"const {'cplx' if n.kind == COMPLEX else 'real_t'}* __restrict__ c{j}"
        for j, n in enumerate(split.cache)
    ]
    col_args = [f"c{j}" for j in range(len(split.cache))]
    cache_pos = {n.serial: j for j, n in enumerate(split.cache)}
    loads = [f"    const {ctype(n)} {ev.name(n)} = c{cache_pos[n.serial]}[i];" for n in split.cache]
    forward = ev.forward(split.mixed_nodes)
    root = ev.name(split.root)

    sweep = ["    " + ("cplx g_root = ld_to_c(seed);" if split.root.kind == COMPLEX
                       else "real_t g_root = seed;")]
    adjoint: dict[int, str] = {split.root.serial: "g_root"}
    bset = set(b_rows)

    sweep += ev.sweep(split.mixed_nodes, adjoint, lambda n: n.serial in mixed or n.serial in bset)
    outputs = []
    for b in boundary:
        g = adjoint.get(b.serial)
        r0 = b_rows[b.serial]
        if b.kind == COMPLEX:
            outputs.append(f"    t[{r0}] = (double)({g}.re);" if g else f"    t[{r0}] = 0;")
            outputs.append(f"    t[{r0 + 1}] = (double)({g}.im);" if g else f"    t[{r0 + 1}] = 0;")
        else:
            outputs.append(f"    t[{r0}] = (double)({g});" if g else f"    t[{r0}] = 0;")

    ev_params = ", ".join([f"const {P}LdHead& h", *col_params, "const real_t* __restrict__ w",
                           "const long long i", "const int transform"])

    def event_fn(name: str, with_gradient: bool) -> list[str]:
        k = rows if with_gradient else 1
        what = "t[0] = w t(Re v)" + (", t[1..] boundary adjoints" if with_gradient else "")
        out = [f"// terms of event i: {what}; false when the value is not finite, or not "
               "positive under a positive transform",
               f"LD_FN bool {P}ld_{name}({ev_params}, double (&t)[{k}]) {{", *loads, *forward,
               f"    const real_t r = ld_re({root});",
               "    const real_t lo = transform != 0 ? (real_t)0 : -ld_inf();",
               "    if (!(r > lo && r < ld_inf())) return false;",
               "    const real_t wi = w[i];",
               "    t[0] = transform == 2 ? (double)wi * log((double)r) : (double)wi * (double)r;"]
        if with_gradient:
            out += ["    const real_t seed = transform == 2 ? wi / r : wi;", *sweep, *outputs]
        out += ["    return true;", "}"]
        return out

    value_fn = [f"LD_FN {ctype(split.root)} {P}ld_value({', '.join([f'const {P}LdHead& h', *col_params])}, "
                "const long long i) {", *loads, *forward, f"    return {root};", "}"]

    n_params = len(split.free)
    p_params = [f"const real_t p{j}" for j in range(n_params)]
    p_setup = [f"    const real_t p[{max(n_params, 1)}] = {{"
               + ", ".join(f"p{j}" for j in range(n_params)) + "};",
               f"    const {P}LdHead h = {P}ld_head(p);"]
    grid_loop = ("    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;"
                 " i += (long long)blockDim.x * gridDim.x) {")

    def kernel(role: str, extra: list[str], body: list[str]) -> list[str]:
        sig = ", ".join([*col_params, *extra, *p_params])
        return [f'extern "C" __global__ void __launch_bounds__({MAX_BLOCK}) {P}{role}({sig}) {{',
                *p_setup, *body, "}"]

    def sum_kernel(role: str, k: int, event: str) -> list[str]:
        body = [f"    double s{j} = 0, e{j} = 0, b{j} = 0;" for j in range(k)]
        body += [grid_loop, f"        double t[{k}];",
                 f"        if (!{P}ld_{event}(h, {', '.join(col_args + ['w', 'i', 'transform'])}, t)) {{",
                 "            ld_reject(bad, i);", "            continue;", "        }"]
        body += [f"        ld_acc(s{j}, e{j}, b{j}, t[{j}]);" for j in range(k)]
        body += ["    }"]
        body += [f"    ld_store(partial, {j}, s{j}, e{j}, b{j});" for j in range(k)]
        extra = ["const real_t* __restrict__ w", "const long long n", "const int transform",
                 "double* __restrict__ partial", "unsigned long long* __restrict__ bad"]
        return kernel(role, extra, body)

    def terms_kernel(role: str, k: int, event: str) -> list[str]:
        body = [grid_loop, f"        double t[{k}];",
                f"        if (!{P}ld_{event}(h, {', '.join(col_args + ['w', 'i', 'transform'])}, t)) {{",
                "            ld_reject(bad, i);",
                f"            for (int j = 0; j < {k}; ++j) t[j] = 0;", "        }",
                *[f"        out[{j}ll * n + i] = t[{j}];" for j in range(k)], "    }"]
        extra = ["const real_t* __restrict__ w", "const long long n", "const int transform",
                 "double* __restrict__ out", "unsigned long long* __restrict__ bad"]
        return kernel(role, extra, body)

    values_kernel = kernel(
        "values", ["const long long n", f"{ctype(split.root)}* __restrict__ out"],
        [grid_loop, f"        out[i] = {P}ld_value(h, {', '.join(col_args + ['i'])});", "    }"])

    body = [
        f"// ---- model {P or '(no prefix)'}: {len(split.cache)} cached columns, "
        f"{len(split.param_nodes)} parameter-only nodes, {len(split.mixed_nodes)} per-event nodes, "
        f"{rows} gradient rows",
        *head_struct, *head_fn, *value_fn,
        *event_fn("value_event", False), *event_fn("gradient_event", True),
        "#ifndef LADDU_HOST_EMULATION",
        *sum_kernel("value_sum", 1, "value_event"),
        *sum_kernel("gradient_sum", rows, "gradient_event"),
        *terms_kernel("value_terms", 1, "value_event"),
        *terms_kernel("gradient_terms", rows, "gradient_event"),
        *values_kernel,
        "#endif",
    ]
    text = "\n".join(body) + "\n"
    head = prelude(precision)
    kernels = {role: P + role for role in ROLES}
    kernels["merge"] = MERGE_KERNEL
    digest = hashlib.sha256((head + text).encode()).hexdigest()[:24]
    return CudaSource(
        precision=precision, prefix=P, prelude=head, body=text, kernels=kernels,
        boundary=tuple(boundary), boundary_rows=tuple(b_rows[b.serial] for b in boundary),
        rows=rows, cache_kinds=tuple(n.kind for n in split.cache), n_params=n_params,
        root_kind=split.root.kind, digest=digest,
    )


# ---------------------------------------------------------------------------------------
# ahead-of-time compilation (tests, dry runs)
# ---------------------------------------------------------------------------------------
def compile_with_nvcc(source: str, arch: str = "sm_90", *, output: str | os.PathLike | None = None,
                      ptx: bool = False, options: Sequence[str] = DEFAULT_OPTIONS,
                      nvcc: str | None = None) -> Path:
    """Compile CUDA source with ``nvcc`` (device code only) and return the output file.

    Parameters
    ----------
    source : str
        A translation unit (:attr:`CudaSource.text` or :func:`combine_sources`).
    arch : str
        ``-arch`` of nvcc (``sm_90`` for H100/H200).
    output : path, optional
        The cubin (or PTX) to write; a temporary directory's file by default.
    ptx : bool
        Emit PTX instead of a cubin.
    options : sequence of str
        Further nvcc options (default :data:`DEFAULT_OPTIONS`).
    nvcc : str, optional
        The compiler (default ``nvcc`` on ``PATH``).

    Raises
    ------
    CudaCompileError
        nvcc is missing or rejects the source (its log is in the message).
    """
    exe = shutil.which(nvcc or "nvcc")
    if exe is None:
        raise CudaCompileError(f"{nvcc or 'nvcc'} not found; install the CUDA toolkit to compile kernels")
    folder = Path(tempfile.mkdtemp(prefix="laddu_dask_cuda_"))
    cu = folder / "kernels.cu"
    cu.write_text(source)
    out = Path(output) if output is not None else folder / ("kernels.ptx" if ptx else "kernels.cubin")
    cmd = [exe, f"-arch={arch}", "--ptx" if ptx else "--cubin", *options, "-o", str(out), str(cu)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise CudaCompileError(
            f"nvcc failed ({' '.join(cmd)}), exit {proc.returncode}:\n{proc.stderr}{proc.stdout}"
        )
    return out
