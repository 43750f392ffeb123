"""Generated CUDA kernels (:mod:`laddu_dask.compile.cuda`, launched by
:mod:`laddu_dask.runtime.cuda_backend`).

Three levels, so that a machine without a GPU still checks what it can:

* the structure of the generated source (pure Python);
* ``nvcc`` compiles the source of every test model, one translation unit per precision
  (skipped without nvcc), and the per-event code and the compensated sums, compiled
  for the host with g++ (a *host emulation*), agree with the NumPy kernels;
* on a CUDA device (``-m gpu``; skipped without CuPy or a device) the kernels agree
  with the CPU kernels.
"""

from __future__ import annotations

import math
import re
import shutil
from concurrent.futures import ThreadPoolExecutor
from fractions import Fraction

import numpy as np
import pytest
from cuda_emulation import HostEmulation
from gpu_reference import needs_gpu

import laddu_dask as ld
from laddu_dask import ksks
from laddu_dask.compile.compiled import CompiledModel
from laddu_dask.compile.cuda import (
    MERGE_KERNEL,
    ROLES,
    CudaCompileError,
    CudaPrinter,
    combine_sources,
    compile_with_nvcc,
    generate_cuda_source,
    real_literal,
)
from laddu_dask.compile.graph import boundary
from laddu_dask.compile.plan import TRANSFORM_CODES, ReductionPlan
from laddu_dask.errors import DataError, NonFiniteError, ParameterError
from laddu_dask.expr.ops import OPS, REAL, Term, call, conj
from laddu_dask.runtime.accumulate import ExactPartials
from laddu_dask.runtime.cuda_backend import CudaKernels
from laddu_dask.runtime.partition import Params, PreparedPartition
from laddu_dask.runtime.reducer import CertifiedPartials, PartitionReducer

NVCC = shutil.which("nvcc")
GXX = shutil.which("g++")
needs_nvcc = pytest.mark.skipif(NVCC is None, reason="nvcc not found on PATH (CUDA toolkit)")
needs_gxx = pytest.mark.skipif(GXX is None, reason="g++ not found on PATH (host emulation)")

N_EVENTS = 400
RNG = np.random.default_rng(7)
COLUMNS = {c: RNG.normal(0.0, 0.8, N_EVENTS) for c in ("g1", "g2", "g3")}
OPS_PARAMS = [0.7, -0.4, 0.3]


def every_op_model() -> ld.Expr:
    """A model whose per-event part applies every operation to real and complex arguments
    (and whose parameter-only part applies most of them too)."""
    g1, g2, g3 = (ld.scalar(c) for c in ("g1", "g2", "g3"))
    p0, p1, p2 = (ld.parameter(n) for n in ("p0", "p1", "p2"))
    x = p0 * g1 + p1
    z = ld.complex(p0 * g2, p1 - g3) * (0.75 - 0.5j) + p2
    pos = x.norm_sqr() + 1.0
    cpos = ld.complex(pos, z.imag())
    small = x.sin() * 0.3
    csmall = ld.complex(small, z.real().cos() * 0.3)
    head = (p0.sin() * p1.cos() + (p2 * p2 + 1.0).log() + (p0 * p0 + 2.0).sqrt()
            + ld.atan2(p0, p1 + 3.0) + ld.complex(p0, p1).abs() + (p1 * 0.1).tan()
            + (p0 * 0.2).exp() + (p0 * p0 + 1.0) ** 0.5 + p1**3 + ld.complex(p1, p2).norm_sqr())
    chead = ld.complex(p0, p2) * ld.complex(p1, 0.5).exp() / ld.complex(p2 + 2.0, p0).sqrt()
    real_terms = [-x, x.sin(), x.cos(), small.tan(), small.exp(), pos.log(), pos.sqrt(), x.abs(),
                  x.norm_sqr(), x**2, x**3, pos**-1, pos**0.7, pos**small, ld.atan2(x, pos),
                  ld.atan2(pos, x), x / pos, x - z.real(), x * head, small.acos()]
    complex_terms = [-z, z.sin(), csmall.cos(), csmall.tan(), csmall.exp(), cpos.log(), cpos.sqrt(),
                     z.conj(), z.real(), z.imag(), z.norm_sqr(), cpos.abs(), z**2, cpos**-2,
                     cpos**1.3, pos**csmall, cpos**csmall, z / x.norm_sqr().exp(), x / cpos,
                     z / cpos, z * x, x.to_complex(), ld.complex(x, small), z * chead,
                     (small + 1.0) ** z.real().cos(), ld.cis(x)]
    total = None
    for k, term in enumerate(real_terms + complex_terms):
        term = term * (1.0 + 0.01 * k)
        total = term if total is None else total + term
    return total


def compiled_models() -> dict[str, CompiledModel]:
    """Prefix -> compiled model of every model the CUDA tests compile."""
    return {
        "ops_": CompiledModel.from_expr(every_op_model()),
        "opspos_": CompiledModel.from_expr(every_op_model().norm_sqr() + 1.0),
        "bw_": CompiledModel.from_expr(ksks.model("bw")),
        "rbw_": CompiledModel.from_expr(ksks.model("rbw")),
        "fixed_": CompiledModel.from_expr(ksks.model("rbw", fixed_lineshapes=True)),
    }


# ---------------------------------------------------------------------------------------
# structure of the source (pure Python)
# ---------------------------------------------------------------------------------------
def test_every_op_model_reaches_every_operation_and_kind():
    split = CompiledModel.from_expr(every_op_model()).split
    assert all(spec.cuda for spec in OPS.values())  # every operation has a CUDA spelling
    assert {n.op for n in split.mixed_nodes} == set(OPS)
    kinds = {(n.op, tuple(a.kind for a in n.args)) for n in split.mixed_nodes}
    for op in ("sin", "cos", "tan", "exp", "log", "sqrt", "abs", "norm_sqr", "powi", "neg"):
        assert {(op, ("real",)), (op, ("complex",))} <= kinds, op
    for pair in (("real", "complex"), ("complex", "real"), ("complex", "complex"), ("real", "real")):
        assert ("pow", pair) in kinds and ("div", pair) in kinds, pair


@pytest.mark.parametrize("precision", ["f64", "f32"])
def test_source_structure(precision):
    cm = CompiledModel.from_expr(ksks.model("rbw"))
    src = generate_cuda_source(cm.split, precision, prefix="m_")
    for role in ROLES:
        assert src.kernels[role] == "m_" + role
        assert f'extern "C" __global__ void __launch_bounds__(256) m_{role}(' in src.body
    assert src.kernels["merge"] == MERGE_KERNEL and f"void {MERGE_KERNEL}(" in src.prelude
    # the rows follow the CPU fused kernels' boundary layout
    nodes = boundary(cm.split)
    assert list(src.boundary) == nodes
    assert src.rows == 1 + sum(2 if b.kind == "complex" else 1 for b in nodes)
    assert src.n_params == len(cm.parameter_names) == 10
    assert src.cache_kinds == tuple(n.kind for n in cm.split.cache)
    # every constant of the model is spelled exactly in hexadecimal, and no decimal
    # floating literal appears anywhere
    # every constant the kernels use (event-only nodes run on the host at preparation)
    consts = {a.serial: a for n in cm.split.param_nodes + cm.split.mixed_nodes for a in n.args
              if a.op == "const"}.values()
    assert len(consts) >= 5
    f32 = precision == "f32"
    for node in consts:
        values = [node.attr.real, node.attr.imag] if isinstance(node.attr, complex) else [node.attr]
        for v in values:
            assert real_literal(v, f32) in src.body, (node, v)
    code = re.sub(r"//.*", "", src.text)
    code = re.sub(r"0x[0-9a-f]+(\.[0-9a-f]*)?p[-+]\d+f?", "HEX", code)
    assert "HEX" in code
    decimal = r"(?<![\w.])(\d+\.\d*|\.\d+|\d+[eE][-+]?\d+)"
    assert not re.search(decimal, code), "a decimal floating literal"
    # deterministic: again, and from a model rebuilt from scratch
    assert generate_cuda_source(cm.split, precision, prefix="m_").text == src.text
    rebuilt = CompiledModel(ld.Model(ksks.model("rbw")))
    assert generate_cuda_source(rebuilt.split, precision, prefix="m_").text == src.text


def test_literals_are_exact():
    rng = np.random.default_rng(3)
    for v in [0.0, -0.0, 1.0, -2.5, 1e-310, 1.7976931348623157e308, *rng.normal(size=50) * 1e5]:
        text = real_literal(v, False).strip("()")
        assert float.fromhex(text) == v and math.copysign(1, float.fromhex(text)) == math.copysign(1, v)
        if abs(v) < 3e38:
            t32 = real_literal(v, True).strip("()")
            assert t32.endswith("f") and float.fromhex(t32[:-1]) == float(np.float32(v))
    assert real_literal(float("inf"), False) == "ld_inf()"
    assert real_literal(float("nan"), True) == "ld_nan()"


def test_cuda_printer_spells_rule_terms():
    """Derivative rules print through the operations' CUDA spellings (once, from the spec)."""
    v1, g = Term.symbol("x0", REAL), Term.symbol("g", REAL)
    leaves = {"x0": "h.v1", "g": "g"}
    printer = CudaPrinter([], f32=False)
    assert printer.term(g * conj(v1 ** -2), leaves) == "(g * ld_powi(h.v1, -2))"
    assert printer.term(g * conj(call("to_complex", v1) ** -2), leaves) == \
        "(g * ld_conj(ld_powi(ld_to_c(h.v1), -2)))"
    assert CudaPrinter([], f32=True).term(1j * g, leaves) == "(ld_c(0x0p+0f, 0x1p+0f) * g)"
    assert printer.term(g * call("pow", v1, v1 - 1), leaves) == "(g * ld_pow(h.v1, (h.v1 - 0x1p+0)))"


def test_generator_errors():
    x, a = ld.scalar("x"), ld.parameter("a")
    event_only = CompiledModel.from_expr(x.sin()).split
    with pytest.raises(ValueError, match="root that depends on events and parameters"):
        generate_cuda_source(event_only, "f64")
    split = CompiledModel.from_expr(a * x).split
    with pytest.raises(ValueError, match="precision must be one of 'f64', 'f32', got 'f16'"):
        generate_cuda_source(split, "f16")
    with pytest.raises(ValueError, match="prefix must be a C identifier start, got '1x'"):
        generate_cuda_source(split, "f64", prefix="1x")
    one = generate_cuda_source(split, "f64", prefix="a_")
    with pytest.raises(ValueError, match="distinct prefixes"):
        combine_sources([one, one])
    with pytest.raises(ValueError, match="precisions"):
        combine_sources([one, generate_cuda_source(split, "f32", prefix="b_")])
    with pytest.raises(ValueError, match="multiple of 32"):
        CudaKernels(split, "f64", block=100)
    with pytest.raises(CudaCompileError, match="no-such-nvcc not found"):
        compile_with_nvcc(one.text, nvcc="no-such-nvcc")


def test_kernels_object_needs_no_gpu_until_a_launch():
    cm = CompiledModel.from_expr(ksks.model("bw"))
    kernels = CudaKernels(cm.split, "f64")
    assert kernels.boundary_size == kernels.rows(True) - 1 and kernels.rows(False) == 1
    # backprop is the fused kernels' (NumPy): a unit adjoint of the first boundary node,
    # s_mass ** 2, gives that node's gradient
    first = kernels.source.boundary[0]
    assert first.op == "mul" and [a.attr.name for a in first.args] == ["s_mass", "s_mass"]
    totals = np.zeros(kernels.boundary_size)
    totals[0] = 1.0
    p = np.array(cm.parameter_vector(ksks.TRUTH))
    np.testing.assert_array_equal(kernels.backprop(p, totals), [2.0 * p[0]] + [0.0] * 9)


# ---------------------------------------------------------------------------------------
# nvcc: every test model, one translation unit per precision
# ---------------------------------------------------------------------------------------
@needs_nvcc
@pytest.mark.slow  # about 3 s of nvcc on two cores
def test_nvcc_compiles_every_model(tmp_path):
    """PTX for all models (front end and code generation; quick), and a cubin (ptxas too)
    for one KsKs model in each precision."""
    models = compiled_models()
    jobs = []
    for precision in ("f64", "f32"):
        sources = [generate_cuda_source(cm.split, precision, prefix) for prefix, cm in models.items()]
        jobs.append((combine_sources(sources), tmp_path / f"all_{precision}.ptx", True))
        jobs.append((sources[2].text, tmp_path / f"bw_{precision}.cubin", False))
    with ThreadPoolExecutor(max_workers=4) as pool:
        outputs = list(pool.map(lambda j: compile_with_nvcc(j[0], "sm_90", output=j[1], ptx=j[2]), jobs))
    for path in outputs:
        assert path.exists() and path.stat().st_size > 0
    ptx = outputs[0].read_text()
    for prefix in models:
        for role in ROLES:
            assert re.search(rf"\.entry {prefix}{role}\b", ptx), prefix + role


@needs_nvcc
def test_nvcc_errors_carry_the_compiler_log():
    with pytest.raises(CudaCompileError, match=r"nvcc failed[\s\S]*undefined_thing"):
        compile_with_nvcc('extern "C" __global__ void k() { undefined_thing(); }', ptx=True)


# ---------------------------------------------------------------------------------------
# host emulation: the generated arithmetic against the NumPy kernels
# ---------------------------------------------------------------------------------------
def _emulation(cm: CompiledModel, precision: str, tmp_path) -> HostEmulation:
    return HostEmulation(generate_cuda_source(cm.split, precision, prefix="m_"), tmp_path)


def _reference(cm: CompiledModel, cache64: list, weights: np.ndarray, params: list, transform: str):
    """Value and gradient from the NumPy kernels with exact sums (the independent path)."""
    reducer = PartitionReducer(cm, "f64", "numpy")
    part = PreparedPartition(cache64, weights, len(weights), 0, "test")
    p = Params(tuple(np.float64(v) for v in params))
    return reducer.finish(reducer.partials(part, p, ReductionPlan(transform), True), p, True)


def _contains_exact(triples: np.ndarray, terms: np.ndarray) -> bool:
    for (s, e, b), row in zip(triples, terms):
        exact = sum(map(Fraction, row), Fraction(0))
        if not Fraction(s) + Fraction(e) - Fraction(b) <= exact <= Fraction(s) + Fraction(e) + Fraction(b):
            return False
    return True


@needs_gxx
def test_host_emulation_matches_numpy_kernels(tmp_path):
    models = {"ops": CompiledModel.from_expr(every_op_model()),
              "opspos": CompiledModel.from_expr(every_op_model().norm_sqr() + 1.0)}
    cases = [("ops", "f64"), ("opspos", "f64"), ("ops", "f32")]
    # the sources are generated from three threads at once, as a user's threads may do
    with ThreadPoolExecutor(max_workers=3) as pool:
        emus = dict(zip(cases, pool.map(lambda a: _emulation(models[a[0]], a[1], tmp_path), cases)))
    weights = np.linspace(0.5, 1.5, N_EVENTS)
    for name, transform in (("ops", "real"), ("opspos", "log_positive_real")):
        cm, emu = models[name], emus[(name, "f64")]
        cache = cm.event_cache({c: COLUMNS[c] for c in cm.columns})
        values = emu.values(cache, OPS_PARAMS, N_EVENTS)
        expected = cm.values(cache, tuple(OPS_PARAMS), N_EVENTS)
        assert np.all(np.isfinite(expected))
        np.testing.assert_allclose(values, expected, rtol=1e-12, atol=1e-13 * np.abs(expected).max())
        terms, bad = emu.terms(cache, weights, OPS_PARAMS, transform, True)
        assert bad == -1 and terms.shape == (emu.src.rows, N_EVENTS)
        totals = np.array([math.fsum(row) for row in terms])
        value, grad = _reference(cm, cache, weights, OPS_PARAMS, transform)
        assert totals[0] == pytest.approx(value, rel=1e-12)
        kernels = CudaKernels(cm.split, "f64")
        np.testing.assert_allclose(kernels.backprop(np.array(OPS_PARAMS), totals[1:]), grad,
                                   rtol=1e-10, atol=1e-12 * np.abs(grad).max())
        # the compensated sums with their bounds hold the exact sums of the terms; the
        # value-only kernel's terms are the gradient kernel's first row
        for threads in (1, 7, 64):
            triples, bad = emu.sums(cache, weights, OPS_PARAMS, transform, True, threads)
            assert bad == -1 and _contains_exact(triples, terms)
            assert np.all(triples[:, 2] <= 1e-25 * np.abs(terms).sum(axis=1) + 1e-300)
            certified = CertifiedPartials(triples[:, :2].copy(), triples[:, 2].copy()).certified_floats()
            np.testing.assert_array_equal(certified, totals)
        vterms, _ = emu.terms(cache, weights, OPS_PARAMS, transform, False)
        np.testing.assert_array_equal(vterms[0], terms[0])
    # f32 arithmetic within the float32 error bound of tests/tolerances.py (u D (1 + cond))
    from tolerances import condition, f32_bound

    cm = models["ops"]
    cache32 = cm.event_cache({c: COLUMNS[c] for c in cm.columns}, precision="f32")
    v32 = emus[("ops", "f32")].values(cache32, OPS_PARAMS, N_EVENTS)
    v64 = cm.values(cm.event_cache({c: COLUMNS[c] for c in cm.columns}), tuple(OPS_PARAMS), N_EVENTS)
    assert v32.dtype == np.complex64
    bound = f32_bound(v64, condition(cm, COLUMNS, OPS_PARAMS), axis=None)
    assert np.all(np.abs(v32 - v64) <= bound)


@needs_gxx
@pytest.mark.parametrize("lineshape", ["bw", "rbw"])
def test_host_emulation_of_ksks(lineshape, tmp_path, ksks_arrays):
    cm = CompiledModel.from_expr(ksks.model(lineshape))
    p4s, weights = ksks_arrays["accmc"]
    columns = {f"{k}_{c}": v[:, j] for k, v in p4s.items() for j, c in enumerate(("e", "px", "py", "pz"))}
    cache = cm.event_cache({c: columns[c] for c in cm.columns})
    params = list(cm.parameter_vector(ksks.displaced_start()))
    emu = _emulation(cm, "f64", tmp_path)
    for transform in ("real", "log_positive_real"):
        triples, bad = emu.sums(cache, weights, params, transform, True, threads=256)
        assert bad == -1
        totals = CertifiedPartials(triples[:, :2].copy(), triples[:, 2].copy()).certified_floats()
        value, grad = _reference(cm, cache, weights, params, transform)
        assert totals[0] == pytest.approx(value, rel=1e-13)
        np.testing.assert_allclose(CudaKernels(cm.split, "f64").backprop(np.array(params), totals[1:]),
                                   grad, rtol=1e-11, atol=1e-13 * np.abs(grad).max())


@needs_gxx
def test_host_emulation_reports_the_first_rejected_event(tmp_path):
    x, a = ld.scalar("x"), ld.parameter("a")
    cm = CompiledModel.from_expr(a * x)
    xs = np.array([1.0, 2.0, 3.0, -1.0, 5.0, 0.0, 7.0])
    cache = cm.event_cache({"x": xs})
    emu = _emulation(cm, "f64", tmp_path)
    w = np.ones(len(xs))
    for transform in ("positive_real", "log_positive_real"):
        for with_gradient in (False, True):
            assert emu.terms(cache, w, [2.0], transform, with_gradient)[1] == 3
            assert emu.sums(cache, w, [2.0], transform, with_gradient, threads=4)[1] == 3
    terms, bad = emu.terms(cache, w, [2.0], "real", True)
    assert bad == -1
    np.testing.assert_array_equal(terms, [2.0 * xs, xs])  # w a x, and d/da of it
    with pytest.raises(ValueError, match="reduction transform must be one of 'real', .*, got 'log'"):
        emu.terms(cache, w, [2.0], "log", True)


@needs_gxx
@pytest.mark.parametrize("precision", ["f64", "f32"])
def test_host_emulation_rejects_a_non_finite_value_under_every_transform(precision, tmp_path):
    """(a x)^2 overflows at event 4 (1e200 in f64; 1e20, whose square overflows float32 inside
    the kernel, in f32), (-1)^0.5 is nan at event 6 (a real power; ``sqrt`` of a real that may
    be negative is laddu's complex root): the first is reported even by the real transform,
    which accepts any sign; the reference is where the test put the values."""
    x, a = ld.scalar("x"), ld.parameter("a")
    cm = CompiledModel.from_expr((a * x) * (a * x) + (x + 1.0) ** 0.5)
    big = 1e20 if precision == "f32" else 1e200
    xs = np.array([1.0, 2.0, 3.0, 0.5, big, 5.0, -2.0, 7.0])
    cache = cm.event_cache({"x": xs}, precision)
    emu = _emulation(cm, precision, tmp_path)
    w = np.ones(len(xs))
    for transform in ("real", "positive_real", "log_positive_real"):
        for with_gradient in (False, True):
            assert emu.terms(cache, w, [1.0], transform, with_gradient)[1] == 4
            assert emu.sums(cache, w, [1.0], transform, with_gradient, threads=4)[1] == 4
            # nan alone
            assert emu.terms(cache, w[:4].tolist() + [1.0] * 4, [0.0], transform,
                             with_gradient)[1] == 6
    assert emu.terms([c[:4] for c in cache], w[:4], [1.0], "real", True)[1] == -1


# ---------------------------------------------------------------------------------------
# the launcher's host side, against a stand-in for CuPy that runs the host emulation
# ---------------------------------------------------------------------------------------
class _FakeArray(np.ndarray):
    def get(self) -> np.ndarray:
        return np.array(self)


def _fake_array(x, dtype=None):
    return np.array(x, dtype=dtype).view(_FakeArray)


_SCALARS = {"long long": np.int64, "int": np.int32}


class _FakeFunction:
    """Checks every argument against the kernel's C signature, then does what the kernel
    does, with the host emulation (one "block" holds the whole sum)."""

    def __init__(self, module: _FakeModule, name: str) -> None:
        self.module, self.name, self.ptr = module, name, 0
        match = re.search(rf"void (?:__launch_bounds__\(\d+\) )?{name}\(([^)]*)\)", module.code)
        assert match, name
        self.params = [p.strip() for p in match.group(1).split(",")]

    def _check(self, args: tuple) -> None:
        src = self.module.src
        real = np.float32 if src.precision == "f32" else np.float64
        cplx = np.complex64 if real is np.float32 else np.complex128
        assert len(args) == len(self.params), (self.name, len(args), self.params)
        for decl, arg in zip(self.params, args):
            base = decl.replace("const ", "").replace("__restrict__", "").split()[:-1]
            ctype = " ".join(t for t in base if t != "*").rstrip("*").strip()
            if "*" in decl:
                dt = {"real_t": real, "cplx": cplx, "double": np.float64,
                      "unsigned long long": np.uint64}[ctype]
                assert isinstance(arg, _FakeArray) and arg.dtype == dt, (self.name, decl, arg.dtype)
            else:
                dt = real if ctype == "real_t" else _SCALARS[ctype]
                assert type(arg) is dt, (self.name, decl, type(arg))

    def __call__(self, grid: tuple, block: tuple, args: tuple) -> None:
        self._check(args)
        src, emu = self.module.src, self.module.emu
        role = self.name[len(src.prefix):] if self.name != MERGE_KERNEL else "merge"
        nc = len(src.cache_kinds)
        if role == "merge":
            partial, nblocks, rows, bad, out = args
            blocks = np.asarray(partial).reshape(int(rows), int(nblocks), 3)
            assert not np.any(blocks[:, 1:]), "the stand-in sums in block 0"
            out[: 3 * rows] = blocks[:, 0].ravel()
            out[3 * rows] = -1.0 if bad[0] == 0 else float(~np.uint64(bad[0]))
            return
        cols, p = list(args[:nc]), list(args[-src.n_params:])
        if role == "values":
            n, out = args[nc], args[nc + 1]
            out[:] = emu.values(cols, p, int(n))
            return
        w, n, transform, out, bad = args[nc: nc + 5]
        name = {v: k for k, v in TRANSFORM_CODES.items()}[int(transform)]
        with_gradient = role.startswith("gradient")
        if role.endswith("_sum"):
            triples, first = emu.sums(cols, w, p, name, with_gradient, threads=grid[0] * block[0])
            view = np.asarray(out).reshape(len(triples), grid[0], 3)
            view[:] = 0.0
            view[:, 0] = triples
        else:
            terms, first = emu.terms(cols, w, p, name, with_gradient)
            out[...] = terms
        if first >= 0:
            bad[0] = ~np.uint64(first)


class _FakeModule:
    sources: dict = {}

    def __init__(self, code: str, options: tuple) -> None:
        assert "--fmad=false" in options
        self.code = code
        self.src, self.emu = self.sources[code]

    def compile(self) -> None:
        pass

    def get_function(self, name: str) -> _FakeFunction:
        return _FakeFunction(self, name)


def _fake_cupy():
    import types

    cp = types.ModuleType("cupy")
    cp.ndarray = _FakeArray
    cp.asarray = _fake_array
    cp.zeros = lambda shape, dtype=np.float64: np.zeros(shape, dtype).view(_FakeArray)
    cp.empty = lambda shape, dtype=np.float64: np.full(shape, np.nan, dtype).view(_FakeArray) \
        if np.dtype(dtype).kind in "fc" else np.zeros(shape, dtype).view(_FakeArray)
    cp.ones = lambda shape, dtype=np.float64: np.ones(shape, dtype).view(_FakeArray)
    cp.float64, cp.float32, cp.uint64 = np.float64, np.float32, np.uint64
    cp.RawModule = _FakeModule
    device = types.SimpleNamespace(id=0, attributes={"MultiProcessorCount": 3})
    cp.cuda = types.SimpleNamespace(
        Device=lambda *a: device,
        compiler=types.SimpleNamespace(CompileException=RuntimeError),
    )
    return cp


@needs_gxx
@pytest.mark.parametrize("precision", ["f64", "f32"])
def test_launcher_marshalling_with_a_cupy_stand_in(precision, tmp_path, monkeypatch):
    """``CudaKernels`` passes every argument with the type the kernel declares, sizes the
    buffers, and decodes the merged sums, the rejected event and its value."""
    cp = _fake_cupy()
    monkeypatch.setitem(__import__("sys").modules, "cupy", cp)
    cm = CompiledModel.from_expr(every_op_model().norm_sqr() + 1.0)
    kernels = CudaKernels(cm.split, precision, block=64)
    emu = HostEmulation(kernels.source, tmp_path)
    _FakeModule.sources[kernels.source.text] = (kernels.source, emu)
    real = np.float32 if precision == "f32" else np.float64
    cache_host = cm.event_cache({c: COLUMNS[c] for c in cm.columns}, precision)
    cache = [cp.asarray(c) for c in cache_host]
    weights = np.linspace(0.5, 1.5, N_EVENTS).astype(real)
    w = cp.asarray(weights)
    for transform in ("real", "log_positive_real"):
        for with_gradient in (False, True):
            out = kernels.reduce(cache, w, OPS_PARAMS, transform, with_gradient)
            triples, _ = emu.sums(cache_host, weights, OPS_PARAMS, transform, with_gradient,
                                  threads=7 * 64)  # ceil(400 / 64) blocks of 64 threads
            np.testing.assert_array_equal(out.terms, triples[:, :2])
            np.testing.assert_array_equal(out.bound, triples[:, 2])
            assert out.bad_index == -1 and out.bad_value is None
            terms, bad, _ = kernels.terms(cache, w, OPS_PARAMS, transform, with_gradient)
            assert bad == -1
            np.testing.assert_array_equal(terms, emu.terms(cache_host, weights, OPS_PARAMS, transform,
                                                           with_gradient)[0])
    values = kernels.values(cache, OPS_PARAMS)
    np.testing.assert_array_equal(values, emu.values(cache_host, OPS_PARAMS, N_EVENTS))
    # a rejected event: its index and value come back
    x, a = ld.scalar("x"), ld.parameter("a")
    small = CudaKernels(CompiledModel.from_expr(a * x).split, precision)
    _FakeModule.sources[small.source.text] = (small.source, HostEmulation(small.source, tmp_path))
    xs = cp.asarray(np.array([1.0, 2.0, -3.0, 0.0], dtype=real))
    out = small.reduce([xs], cp.ones(4, real), [2.0], "log_positive_real", True)
    assert (out.bad_index, out.bad_value) == (2, -6.0)
    assert small.terms([xs], cp.ones(4, real), [2.0], "positive_real", False)[1] == 2
    # a value that overflows (at event 1) comes back the same way, and the reducer makes it a
    # NonFiniteError naming the event and its source, on the fast and on the exact path
    huge = cp.asarray(np.array([1.0, 3e38, 2.0], dtype=real))
    out = small.reduce([huge], cp.ones(3, real), [1e300 if precision == "f64" else 10.0], "real",
                       True)
    assert (out.bad_index, out.bad_value) == (1, math.inf)
    reducer = PartitionReducer(CompiledModel.from_expr(a * x), precision, device="gpu")
    assert reducer.kernel == "cuda"
    reducer.cuda = small
    part = PreparedPartition([huge], cp.ones(3, real), 3, 40, "run7.parquet [rows 40:43]")
    point = Params((real(1e300 if precision == "f64" else 10.0),))
    for exact in (False, True):
        with pytest.raises(NonFiniteError, match=r"non-finite intensity inf at event 41 "
                                                 r"\(run7.parquet \[rows 40:43\]\); a real reduction"):
            reducer._cuda(part, point, ReductionPlan.weighted_real(), True, exact)
    assert small.reduce([xs[:0]], cp.ones(0, real), [2.0], "real", True).terms.shape == (2, 2)
    with pytest.raises(DataError, match="cached column 0 is not a CuPy array"):
        small.reduce([np.ones(4, real)], cp.ones(4, real), [2.0], "real", False)
    with pytest.raises(DataError, match="weights must be a contiguous 1-d CuPy"):
        small.reduce([xs], cp.ones(3, real), [2.0], "real", False)
    with pytest.raises(ParameterError, match="expected 1 parameter values, got 2"):
        small.reduce([xs], cp.ones(4, real), [2.0, 1.0], "real", False)
    with pytest.raises(ValueError, match="reduction transform must be one of .*, got 'sqrt'"):
        small.reduce([xs], cp.ones(4, real), [2.0], "sqrt", False)


@needs_gxx
def test_an_overflowing_gradient_intermediate_is_redone_scaled_on_the_cuda_path(tmp_path, monkeypatch):
    """The exact CUDA path recomputes an entry whose reverse sweep overflowed (w = 1e300 times
    y = 1e200) with the event's weight scaled down (issue 23, item 14): the closed form's
    sums, as the CPU kernels give them."""
    cp = _fake_cupy()
    monkeypatch.setitem(__import__("sys").modules, "cupy", cp)
    x, y, a = ld.scalar("x"), ld.scalar("y"), ld.parameter("a")
    cm = CompiledModel.from_expr((a * x) * y + a * a)
    kernels = CudaKernels(cm.split, "f64")
    _FakeModule.sources[kernels.source.text] = (kernels.source, HostEmulation(kernels.source, tmp_path))
    reducer = PartitionReducer(cm, "f64", device="gpu")
    reducer.cuda = kernels
    xs, ys, w = np.array([1e-200, 1.0, 2e-200]), np.array([1e200, 2.0, 3e200]), np.array([1e300, 1.0, 2e300])
    cache = cm.event_cache({"x": xs, "y": ys}, "f64")
    part = PreparedPartition([cp.asarray(c) for c in cache], cp.asarray(w), 3, 0, "arrays [rows 0:3]")
    point = Params((1.5,))
    partials = reducer._cuda(part, point, ReductionPlan.weighted_real(), True, True)
    value, grad = reducer.finish(partials, point, True)
    xy = [Fraction(u) * Fraction(v) for u, v in zip(xs, ys, strict=True)]
    a_ = Fraction(1.5)
    assert value == pytest.approx(float(sum(Fraction(wi) * (a_ * v + a_ * a_) for wi, v in zip(w, xy))),
                                  rel=1e-15)
    assert grad[0] == pytest.approx(float(sum(Fraction(wi) * (v + 2 * a_) for wi, v in zip(w, xy))),
                                    rel=1e-15)


# ---------------------------------------------------------------------------------------
# on a CUDA device
# ---------------------------------------------------------------------------------------


def _device_cache(cm: CompiledModel, columns: dict, precision: str):
    import cupy

    return [cupy.asarray(c) for c in cm.event_cache({c: columns[c] for c in cm.columns}, precision)]


@pytest.mark.gpu
@needs_gpu
@pytest.mark.parametrize("precision", ["f64", "f32"])
@pytest.mark.parametrize("name", ["ops", "opspos"])
def test_gpu_reductions_match_cpu(name, precision):
    import cupy

    cm = compiled_models()[name + "_"]
    transform = "real" if name == "ops" else "log_positive_real"
    real = np.float32 if precision == "f32" else np.float64
    weights = np.linspace(0.5, 1.5, N_EVENTS)
    kernels = CudaKernels(cm.split, precision)
    cache = _device_cache(cm, COLUMNS, precision)
    w = cupy.asarray(weights.astype(real))
    value, grad = _reference(cm, cm.event_cache({c: COLUMNS[c] for c in cm.columns}), weights,
                             OPS_PARAMS, transform)
    rtol = 1e-12 if precision == "f64" else 2e-3
    out = kernels.reduce(cache, w, OPS_PARAMS, transform, True)
    assert out.bad_index == -1 and out.terms.shape == (kernels.rows(True), 2)
    totals = CertifiedPartials(out.terms, out.bound).certified_floats()
    assert totals[0] == pytest.approx(value, rel=rtol)
    np.testing.assert_allclose(kernels.backprop(np.array(OPS_PARAMS), totals[1:]), grad,
                               rtol=rtol * 10, atol=rtol * np.abs(grad).max())
    # the exact fallback: per-event terms whose exact sums equal the certified sums
    terms, bad, _ = kernels.terms(cache, w, OPS_PARAMS, transform, True)
    assert bad == -1
    exact = ExactPartials.from_terms(terms).to_floats()
    np.testing.assert_array_equal(exact, totals)
    v_only = kernels.reduce(cache, w, OPS_PARAMS, transform, False)
    assert CertifiedPartials(v_only.terms, v_only.bound).certified_floats()[0] == totals[0]
    values = kernels.values(cache, OPS_PARAMS).get()
    expected = cm.values(cm.event_cache({c: COLUMNS[c] for c in cm.columns}), tuple(OPS_PARAMS))
    np.testing.assert_allclose(values, expected, rtol=rtol, atol=rtol * np.abs(expected).max())


@pytest.mark.gpu
@needs_gpu
def test_gpu_rejects_the_first_nonpositive_event_and_handles_empty_partitions():
    import cupy

    x, a = ld.scalar("x"), ld.parameter("a")
    cm = CompiledModel.from_expr(a * x)
    xs = np.concatenate([np.ones(100_000), [-1.0], np.ones(1000), [0.0]])
    kernels = CudaKernels(cm.split, "f64")
    cache = [cupy.asarray(xs)]
    w = cupy.ones(len(xs))
    out = kernels.reduce(cache, w, [2.0], "log_positive_real", True)
    assert out.bad_index == 100_000 and out.bad_value == -2.0
    assert kernels.terms(cache, w, [2.0], "positive_real", False)[1] == 100_000
    empty = kernels.reduce([cupy.zeros(0)], cupy.zeros(0), [2.0], "real", True)
    assert np.all(empty.terms == 0) and np.all(empty.bound == 0)
    with pytest.raises(ParameterError, match="expected 1 parameter values, got 2"):
        kernels.reduce(cache, w, [2.0, 3.0], "real", False)
    with pytest.raises(DataError, match="cached column 0 must be a contiguous 1-d float64"):
        kernels.reduce([cupy.asarray(xs, dtype=cupy.float32)], w, [2.0], "real", False)


@pytest.mark.gpu
@needs_gpu
@pytest.mark.parametrize("lineshape", ["bw", "rbw"])
def test_gpu_ksks_matches_fused_cpu(lineshape, ksks_arrays):
    import cupy

    cm = CompiledModel.from_expr(ksks.model(lineshape))
    p4s, weights = ksks_arrays["data"]
    columns = {f"{k}_{c}": v[:, j] for k, v in p4s.items() for j, c in enumerate(("e", "px", "py", "pz"))}
    params = list(cm.parameter_vector(ksks.displaced_start()))
    kernels = CudaKernels(cm.split, "f64")
    out = kernels.reduce(_device_cache(cm, columns, "f64"), cupy.asarray(weights), params,
                         "log_positive_real", True)
    totals = CertifiedPartials(out.terms, out.bound).certified_floats()
    value, grad = _reference(cm, cm.event_cache({c: columns[c] for c in cm.columns}), weights, params,
                             "log_positive_real")
    assert totals[0] == pytest.approx(value, rel=1e-12)
    np.testing.assert_allclose(kernels.backprop(np.array(params), totals[1:]), grad, rtol=1e-10,
                               atol=1e-12 * np.abs(grad).max())
