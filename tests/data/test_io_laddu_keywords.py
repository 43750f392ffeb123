"""laddu 0.28.1's I/O keywords against laddu itself (issue 24, point 3).

``read_parquet(path, memory=, cache=, nulls=, validate=, schema=)`` and ``read_root(path,
tree=, ...)`` read the same files into the same datasets as laddu's (event counts, names,
every value bitwise); ``Dataset.evaluate(expr, real=True)`` equals laddu's on real-typed
expressions (``Vec4.m()``, ``Channel.mass``); ``write_to`` returns laddu's ``WriteResult``;
bad values are typed errors naming the keyword; ``Execution`` and ``Channel`` as laddu's.
"""

from __future__ import annotations

import inspect
import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from laddu_reference import laddu, needs_laddu

import laddu_dask as ld
from laddu_dask import ksks
from laddu_dask.errors import BudgetError, DataError, ModelError, SchemaError
from laddu_dask.runtime.prepared import PreparedModel

pytestmark = needs_laddu

P4S = ("beam", "proton", "kshort1", "kshort2")
COMPONENTS = ("e", "px", "py", "pz")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """One KsKs sample with two scalars, as Parquet (ours) and ROOT (written by laddu); and a
    Parquet file with nulls."""
    folder = tmp_path_factory.mktemp("io")
    sample = pq.read_table(ksks.write_sample(folder, n_data=400, n_mc=10, seed=24)["data"])
    rng = np.random.default_rng(24)
    table = sample.append_column("pol_angle", pa.array(rng.uniform(-np.pi, np.pi, sample.num_rows)))
    table = table.append_column("pol_magnitude", pa.array(rng.uniform(0.2, 0.4, sample.num_rows)))
    weights = pa.array(rng.uniform(-0.5, 2.0, sample.num_rows))  # not all 1, some negative
    table = table.set_column(table.schema.get_field_index("weight"), "weight", weights)
    pq.write_table(table, folder / "events.parquet")
    laddu.read_parquet(str(folder / "events.parquet")).write_to(laddu.RootSink(str(folder / "events.root"),
                                                                              tree="kin"))
    nulls = pa.table({"beam_e": [5.0, None, 7.0], "beam_px": [0.0, 0.1, 0.2], "beam_py": [0.0, 0.0, 0.0],
                      "beam_pz": [5.0, 6.0, 7.0], "s": [1.0, None, 3.0], "weight": [1.0, 2.0, None]})
    pq.write_table(nulls, folder / "nulls.parquet")
    pq.write_table(nulls.drop_columns(["weight", "s"]).slice(2), folder / "plain.parquet")
    return {"parquet": str(folder / "events.parquet"), "root": str(folder / "events.root"),
            "nulls": str(folder / "nulls.parquet"), "plain": str(folder / "plain.parquet")}


def _values(lib, ds) -> dict[str, np.ndarray]:
    """Every value of a dataset of ``lib`` by flat name (four-vector components through
    ``evaluate``, which both libraries have), and the weights."""
    out = {}
    for p in ds.p4_names():
        for c in COMPONENTS:
            out[f"{p}_{c}"] = np.asarray(ds.evaluate(getattr(lib.Vec4.event(p), c)(), real=True))
    for s in ds.scalar_names():
        out[s] = np.asarray(ds.column(s), dtype=np.float64)
    out["weight"] = np.asarray(ds.weights(), dtype=np.float64)
    return out


def _same_dataset(ours, theirs, *, selected: bool = False) -> None:
    assert len(ours) == len(theirs)
    # laddu sorts a file's four-vectors by name, laddu-dask keeps the file's order (README table);
    # both keep the order of a schema= selection
    p4s = ours.p4_names() if selected else sorted(ours.p4_names())
    assert (p4s, ours.scalar_names()) == (theirs.p4_names(), theirs.scalar_names())
    a, b = _values(ld, ours), _values(laddu, theirs)
    assert sorted(a) == sorted(b)
    for name in a:  # bitwise, NaN where laddu reads a null as NaN
        assert np.array_equal(a[name], b[name], equal_nan=True), name


def _schema(lib, **fields):
    return lib.Schema(**fields)


READS = {
    "defaults": {},
    "memory bytes": {"memory": 2**30},
    "memory text": {"memory": "512 MiB"},
    "memory share": {"memory": "60% available"},
    "memory budget": {"memory": ("MemoryBudget", "2 GiB")},
    "cache resident": {"cache": "resident"},
    "cache streaming": {"cache": "streaming"},
    "cache AUTO": {"cache": " AUTO "},
    "validate off": {"validate": False},
    "schema p4s": {"schema": ("p4s", ["kshort2", "beam"])},
    "schema weights": {"schema": ("p4s", ["beam"], "weights", True)},
    "schema scalars": {"schema": ("scalars", ["pol_magnitude", "pol_angle"], "p4s", ["proton"])},
}


def _keywords(lib, spec):
    out = dict(spec)
    if isinstance(spec.get("memory"), tuple):  # a MemoryBudget of the library
        out["memory"] = getattr(lib, spec["memory"][0])(spec["memory"][1])
    if "schema" in spec:
        fields = spec["schema"]
        out["schema"] = _schema(lib, **dict(zip(fields[::2], fields[1::2], strict=True)))
    return out


@pytest.mark.parametrize("fmt", ["parquet", "root"])
@pytest.mark.parametrize("case", list(READS))
def test_each_read_keyword_reads_what_laddu_reads(files, fmt, case):
    extra = {"tree": "kin"} if fmt == "root" else {}
    ours = getattr(ld, f"read_{fmt}")(files[fmt], **extra, **_keywords(ld, READS[case]))
    theirs = getattr(laddu, f"read_{fmt}")(files[fmt], **extra, **_keywords(laddu, READS[case]))
    _same_dataset(ours, theirs, selected="schema" in READS[case])
    if "cache" in READS[case]:
        assert ours.memory_policy == READS[case]["cache"].strip().lower().replace("auto", "fastest")


def test_four_vectors_keep_the_files_order(files):
    """A difference (README table): laddu lists a Parquet file's four-vectors sorted by name."""
    assert ld.read_parquet(files["parquet"]).p4_names() == list(P4S)
    assert laddu.read_parquet(files["parquet"]).p4_names() == sorted(P4S)


def test_validate_false_still_checks_every_file(tmp_path):
    """A difference (README table): laddu-dask reads every footer (its partitions need the row
    counts), so files with other columns are an error when the dataset is made, whatever
    ``validate``; laddu's ``validate=False`` defers it to the first read."""
    pq.write_table(pa.table({"x": [1.0, 2.0], "y": [3.0, 4.0]}), tmp_path / "a.parquet")
    pq.write_table(pa.table({"x": [5.0]}), tmp_path / "b.parquet")
    pattern = str(tmp_path / "*.parquet")
    with pytest.raises(SchemaError, match=r"a.parquet and .*b.parquet have different columns"):
        ld.read_parquet(pattern, validate=False)
    theirs = laddu.read_parquet(pattern, validate=False)  # made; the error comes with the first read
    with pytest.raises(laddu.LadduError, match="Missing Column: y"):
        len(theirs)


def test_schema_takes_laddus_keywords():
    s = ld.Schema(p4s=["beam"], scalars=["s"], weights=True, columns={"run": "int32"})
    assert (s.p4s, s.scalars, s.weights, s.has_weight) == (("beam",), ("s", "run"), True, True)
    assert ld.io.Schema is ld.Schema and ld.Schema(p4s=["k"]).weights is False
    with pytest.raises(TypeError, match="Schema.weights=. must be a bool, got int"):
        ld.Schema(weights=1)


def test_nulls_nan_reads_nulls_as_laddu_does(files):
    _same_dataset(*(lib.read_parquet(files["nulls"], nulls="nan") for lib in (ld, laddu)))
    # the default: a null is an error when the values are read, in both (ours names the column and event)
    with pytest.raises(DataError, match=r"column 'beam_e' has a missing \(null\) value at event 1"):
        ld.read_parquet(files["nulls"]).evaluate(ld.Vec4.event("beam").e(), real=True)
    with pytest.raises(laddu.LadduError, match="null in column beam_e"):
        len(laddu.read_parquet(files["nulls"]))


def test_memory_policy_is_an_alias_of_cache(files):
    assert ld.read_parquet(files["parquet"], memory_policy="streaming").memory_policy == "streaming"
    both = ld.read_parquet(files["parquet"], memory_policy="resident", cache="Resident")
    assert both.memory_policy == "resident"
    with pytest.raises(ValueError, match="cache='streaming' and memory_policy='resident' disagree"):
        ld.read_parquet(files["parquet"], cache="streaming", memory_policy="resident")


def _decision(dataset, execution):
    """The memory decision of preparing ``dataset`` for a one-column model under ``execution``."""
    model = ld.Vec4.event("kshort1").e() * ld.parameter("a", initial=1.0)
    PreparedModel.prepare(ld.CompiledModel.from_expr(model), execution).prepare_dataset(execution, dataset)
    return execution.memory_decisions()[-1]


def test_a_reads_memory_budget_bounds_its_preparation(files):
    read = ld.read_parquet(files["parquet"], memory="1 MiB")
    assert _decision(read, ld.Execution()).budget_bytes == 2**20
    assert _decision(read.select(ld.scalar("pol_angle") > 0.0), ld.Execution()).budget_bytes == 2**20
    assert _decision(ld.read_parquet(files["parquet"]), ld.Execution()).budget_bytes is None
    # under both budgets, the smaller one
    assert _decision(read, ld.Execution(memory="64 KiB")).budget_bytes == 65536
    assert _decision(ld.read_parquet(files["parquet"], memory="64 KiB"),
                     ld.Execution(memory="1 MiB")).budget_bytes == 65536


BAD = [
    ({"cache": "memory"}, ValueError,
     "cache must be one of 'resident', 'disk', 'streaming', 'fastest', got 'memory'", ValueError),
    ({"cache": 1}, TypeError,
     r"cache must be a str \('fastest', 'resident', 'disk' or 'streaming'\), got int", TypeError),
    ({"nulls": "zero"}, ValueError, "nulls must be 'error' or 'nan', got 'zero'", ValueError),
    ({"nulls": None}, TypeError, r"nulls must be a str \('error' or 'nan'\), got NoneType", TypeError),
    ({"validate": 1}, TypeError, "validate must be a bool, got int", TypeError),
    ({"memory": 1.5}, TypeError, "memory must be a MemoryBudget, a byte count", ValueError),
    ({"memory": "abc"}, BudgetError, "memory='abc': cannot parse memory size 'abc'", ValueError),
    ({"schema": "beam"}, TypeError, "schema must be a laddu_dask.Schema", TypeError),
]


@pytest.mark.parametrize(("keywords", "error", "message", "laddus"), BAD, ids=[str(b[0]) for b in BAD])
def test_bad_read_keywords_are_typed_errors_naming_the_keyword(files, keywords, error, message, laddus):
    with pytest.raises(error, match=message):
        ld.read_parquet(files["parquet"], **keywords)
    with pytest.raises(laddus):  # laddu refuses the same value (a ValueError for a bad memory)
        laddu.read_parquet(files["parquet"], **keywords)


def test_bad_schemas_and_budgets_name_what_is_missing(files):
    with pytest.raises(SchemaError, match=r"schema= needs columns 'zz_e', 'zz_px', 'zz_py', 'zz_pz'.*events"):
        ld.read_parquet(files["parquet"], schema=ld.Schema(p4s=["zz"]))
    with pytest.raises(laddu.LadduError, match="Missing Column: zz_e"):
        len(laddu.read_parquet(files["parquet"], schema=laddu.Schema(p4s=["zz"])))
    with pytest.raises(SchemaError, match="schema= asks for weights .weights=True., but .*plain.parquet"):
        ld.read_parquet(files["plain"], schema=ld.Schema(p4s=["beam"], weights=True))
    with pytest.raises(laddu.LadduError, match="Missing Column: weight"):
        len(laddu.read_parquet(files["plain"], schema=laddu.Schema(p4s=["beam"], weights=True)))
    with pytest.raises(SchemaError, match="schema= needs column 'nope' which .*events.root:kin lacks"):
        ld.read_root(files["root"], tree="kin", schema=ld.Schema(p4s=["beam"], scalars=["nope"]))
    with pytest.raises(BudgetError, match="memory=0: a read's memory budget must be greater than zero bytes"):
        ld.read_root(files["root"], memory=0)
    with pytest.raises(ValueError, match="Schema: has_weight=True and weights=False disagree"):
        ld.Schema(["beam"], [], True, weights=False)


def test_batches_are_laddus(files):
    """``Dataset.batches(chunk_size=)``: the same batches (lengths, four-vectors, scalars,
    weights) as laddu's; ``close()`` ends the iteration with laddu's error."""
    ours, theirs = ld.read_parquet(files["parquet"]), laddu.read_parquet(files["parquet"])
    assert ours.column_names() == theirs.column_names() == ["pol_angle", "pol_magnitude"]
    with ours.batches(chunk_size=150) as mine, theirs.batches(chunk_size=150) as laddus:
        pairs = list(zip(mine, laddus, strict=True))
    assert [(len(a), a.length) for a, _ in pairs] == [(len(b), b.length) for _, b in pairs] == [
        (150, 150), (150, 150), (100, 100)]
    for a, b in pairs:
        assert sorted(a.p4s) == sorted(b.p4s) and list(a.scalars) == list(b.scalars)
        for name in b.p4s:
            assert np.array_equal(a.p4s[name], b.p4s[name])
        for name in b.scalars:
            assert np.array_equal(a.scalars[name], b.scalars[name])
        assert np.array_equal(a.weights, b.weights)
    iterator = ours.batches(chunk_size=150)
    next(iterator)
    iterator.close()
    with pytest.raises(RuntimeError, match="batch iterator is closed"):
        next(iterator)
    with pytest.raises(TypeError, match=r"batches\(execution=\) must be an ld.Execution or None, got int"):
        ours.batches(execution=1)
    assert isinstance(ours.batches(), ld.io.BatchIterator)


# ----------------------------------------------------------------------------- evaluate(real=True)


def _kk_channel(lib):
    return lib.Channel("gamma p -> K_S K_S p", edges=[
        lib.Edge("gamma", p4="beam", particle=lib.particles.PHOTON), lib.Edge("X"),
        lib.Edge("target", p4=lib.Vec4.event("kshort1") + lib.Vec4.event("kshort2") + lib.Vec4.event("proton")
                 - lib.Vec4.event("beam")),
        lib.Edge("recoil", p4="proton"), lib.Edge("ks1", p4="kshort1"), lib.Edge("ks2", p4="kshort2")],
        vertices=[lib.Vertex("production", incoming=["gamma", "target"], outgoing=["X", "recoil"]),
                  lib.Vertex("decay", incoming=["X"], outgoing=["ks1", "ks2"])])


def _real_expressions(lib):
    k1, k2, beam, p = (lib.Vec4.event(n) for n in P4S)
    channel = _kk_channel(lib)
    return {
        "m(K K)": (k1 + k2).m(),
        "m(beam - p), space-like": (beam - p).m(),
        "gamma(K K)": (k1 + k2).gamma(),
        "channel mass X": channel.mass("X"),
        "channel s X": channel.s("X"),
        "sqrt(t) t < 0": (beam - k1 - k2).m2().sqrt(),
        "log(t)": (beam - k1 - k2).m2().log(),
        "acos": (k1.e() - 1.0).acos(),
        "m * m": (beam - p).m() * (beam - p).m(),
        "pol": lib.scalar("pol_magnitude") * lib.scalar("pol_angle").cos(),
    }


def test_evaluate_real_equals_laddus(files):
    ours, theirs = ld.read_parquet(files["parquet"]), laddu.read_parquet(files["parquet"])
    mine, laddus = _real_expressions(ld), _real_expressions(laddu)
    got = ours.evaluate(mine, real=True)
    for name, want in theirs.evaluate(laddus, real=True).items():
        assert got[name].dtype == np.float64
        np.testing.assert_allclose(got[name], want, rtol=1e-12, atol=1e-12 * np.max(np.abs(want)),
                                   err_msg=name)
    # one expression alone, and a space-like mass is the real part (0) as in laddu
    space_like = ours.evaluate(mine["m(beam - p), space-like"], real=True)
    assert np.array_equal(space_like, np.zeros(len(ours)))
    assert np.array_equal(ours.evaluate(mine["channel mass X"]).real, got["channel mass X"])


def test_evaluate_real_refuses_what_laddu_refuses(files):
    ours, theirs = ld.read_parquet(files["parquet"]), laddu.read_parquet(files["parquet"])
    for build in (lambda lib: 1j * lib.scalar("pol_angle"), lambda lib: lib.cis(lib.scalar("pol_angle")),
                  lambda lib: lib.Vec4.event("beam").m() + lib.complex(0.0, 1.0)):
        with pytest.raises(ModelError, match=r"evaluate\(real=True\) needs a real-valued expression"):
            ours.evaluate(build(ld), real=True)
        with pytest.raises(laddu.LadduError, match="requires a real-valued expression"):
            theirs.evaluate(build(laddu), real=True)
    with pytest.raises(ModelError, match=r"evaluate of 'b'\(real=True\) needs a real-valued expression"):
        ours.evaluate({"a": ld.scalar("pol_angle"), "b": 1j * ld.scalar("pol_angle")}, real=True)
    with pytest.raises(ModelError, match="a dataset expression cannot have free parameters .'a'."):
        ours.evaluate(ld.parameter("a") * ld.scalar("pol_angle"))
    with pytest.raises(laddu.LadduError, match="cannot contain free parameters"):
        theirs.evaluate(laddu.parameter("a") * laddu.scalar("pol_angle"))
    fixed = ours.evaluate(ld.parameter("w", fixed=0.5) * ld.scalar("pol_angle"), real=True)
    assert np.array_equal(fixed, np.asarray(theirs.evaluate(laddu.parameter("w", fixed=0.5)
                                                            * laddu.scalar("pol_angle"), real=True)))
    with pytest.raises(TypeError, match="evaluate.execution=. must be an ld.Execution or None, got str"):
        ours.evaluate(ld.scalar("pol_angle"), execution="cpu")
    with pytest.raises(TypeError, match=r"evaluate\(real=\) must be a bool, got int"):
        ours.evaluate(ld.scalar("pol_angle"), real=1)


# ----------------------------------------------------------------------------- smaller names


def test_execution_defaults_are_laddus():
    ours, theirs = inspect.signature(ld.Execution), inspect.signature(laddu.Execution)
    for name in ("backend", "precision"):
        assert ours.parameters[name].default == theirs.parameters[name].default == "auto"
    theirs = laddu.Execution()
    assert (ld.Execution().backend, ld.Execution().precision) == (theirs.backend, theirs.precision)
    assert (theirs.backend, theirs.precision) == ("auto", "f64")
    assert ld.Execution().device == "cpu"  # laddu's "auto" is the CPU: no GPU unless asked for


def _three_body(lib, *, initial=True):
    parent = {"initial_momentum": lib.InitialMomentum.p4([2.5, 0.0, 0.0, 0.0])} if initial else {}
    return lib.Channel("P -> X pi0", edges=[
        lib.Edge("P", output=False, particle=lib.Particle(mass=2.5), **parent),
        lib.Edge("X", mass_proposal=lib.MassProposal(1.0, high=2.0)),
        lib.Edge("pion", particle=lib.particles.PI_ZERO),
        lib.Edge("ks1", particle=lib.particles.K_SHORT), lib.Edge("ks2", particle=lib.particles.K_SHORT)],
        vertices=[lib.Vertex("first", incoming=["P"], outgoing=["X", "pion"]),
                  lib.Vertex("second", incoming=["X"], outgoing=["ks1", "ks2"])])


def test_channel_validate_generation_as_laddus():
    assert _three_body(ld).validate_generation() is None
    assert _three_body(laddu).validate_generation() is None
    with pytest.raises(ld.LadduError, match="no edge has an initial_momentum, so there is no initial state"):
        _three_body(ld, initial=False).validate_generation()
    with pytest.raises(laddu.LadduError):
        _three_body(laddu, initial=False).validate_generation()


def _filled(lib, rng_seed):
    """A histogram of ``lib`` through laddu's in-place calls: fills (weights, errors, flows),
    a merge and set_bin."""
    rng = np.random.default_rng(rng_seed)
    h = lib.Histogram.from_values_with_edges(rng.uniform(-0.5, 3.5, 40), bin_edges=[0.0, 1.0, 2.5, 3.0],
                                             weights=rng.uniform(-1, 2, 40))
    h.merge(lib.Histogram.from_values_with_edges([-1.0, 0.5, 2.6, 9.0], bin_edges=[0.0, 1.0, 2.5, 3.0],
                                                 weights=[0.25, 1.0, -2.0, 4.0]))  # laddu: before any error
    for value, weight, error in zip(rng.uniform(-1, 4, 30), rng.uniform(-1, 3, 30), rng.uniform(0, 1, 30),
                                    strict=True):
        h.fill(float(value), weight=float(weight), error=float(error) if error > 0.5 else None)
    h.fill(3.0)  # the last edge is overflow
    h.set_bin(1, count=7.5)
    h.set_bin(2, error=0.125)
    return h


def test_histogram_fill_merge_set_bin_are_laddus():
    ours, theirs = _filled(ld, 8), _filled(laddu, 8)
    for field in ("counts", "errors"):
        np.testing.assert_allclose(getattr(ours, field), getattr(theirs, field), rtol=1e-13, err_msg=field)
    assert ours.underflow == pytest.approx(theirs.underflow, rel=1e-13)
    assert ours.overflow == pytest.approx(theirs.overflow, rel=1e-13)
    counts = np.array([1.0, 2.0])
    h = ld.Histogram(counts, bin_edges=[0.0, 1.0, 2.0])
    h.fill(0.5)
    assert counts.tolist() == [1.0, 2.0]  # the caller's array is not changed
    nonnegative = "must be finite and non-negative"
    bad = ((lambda: h.fill(float("nan")), "histogram fill value must be finite, got nan"),
           (lambda: h.fill(0.5, weight=np.inf), "histogram fill weight must be finite, got inf"),
           (lambda: h.fill(0.5, error=-1), f"histogram fill error {nonnegative}"),
           (lambda: h.set_bin(2, count=1.0), r"histogram bin index must be an integer in \[0, 2\)"),
           (lambda: h.set_bin(0, error=-1.0), f"histogram bin error {nonnegative}"),
           (lambda: h.merge(ld.Histogram([1.0], bin_edges=[0.0, 1.0])), "merge needs identical bin edges"))
    for call, message in bad:
        with pytest.raises(ModelError, match=message):
            call()
    with pytest.raises(TypeError, match="merge needs a Histogram, got int"):
        h.merge(5)


def test_named_is_accepted_and_changes_no_value(files):
    """A difference (README table): ``named`` returns the expression itself (laddu keeps a display name)."""
    mass = (ld.Vec4.event("kshort1") + ld.Vec4.event("kshort2")).m()
    assert mass.named("m(K K)") is mass
    theirs = (laddu.Vec4.event("kshort1") + laddu.Vec4.event("kshort2")).m().named("m")
    np.testing.assert_allclose(ld.read_parquet(files["parquet"]).evaluate(mass.named("m"), real=True),
                               laddu.read_parquet(files["parquet"]).evaluate(theirs, real=True), rtol=1e-12)
    with pytest.raises(TypeError, match="named.. takes a str, got int"):
        mass.named(3)


def _joint(lib, ds, **keywords):
    k1, k2 = lib.Vec4.event("kshort1"), lib.Vec4.event("kshort2")
    axes = [(k1 + k2).m(), lib.scalar("pol_angle"), k1.e()]
    edges = [[1.0, 1.2, 1.5, 2.0, 2.6], [-3.0, -1.0, 0.0, 1.5, 3.0], [0.5, 2.0, 3.0, 5.0]]
    return ds.joint_histogram(axes, bin_edges=edges, **keywords)


@pytest.mark.parametrize("keywords", [{}, {"event_weights": False}, {"weight": "pol"}])
def test_joint_histogram_is_laddus(files, keywords):
    """The same values, squared weights, diagnostics and JSON as laddu's; merge, add
    (independent or not), subtract and scaled as laddu's."""
    results = {}
    for name, lib in (("ours", ld), ("laddu", laddu)):
        ds = lib.read_parquet(files["parquet"])
        kw = {**keywords, **({"weight": lib.scalar("pol_magnitude")} if "weight" in keywords else {})}
        results[name] = _joint(lib, ds, **kw), _joint(lib, ds.select(lib.scalar("pol_angle") > 0.5), **kw)
    (ours, ours2), (theirs, theirs2) = results["ours"], results["laddu"]
    assert ours.shape == theirs.shape == [4, 4, 3] and ours.axes == theirs.axes
    for a, b in ((ours, theirs), (ours.add(ours2), theirs.add(theirs2)),
                 (ours.subtract(ours2, independent=True), theirs.subtract(theirs2, independent=True)),
                 (2.5 * ours, theirs.scaled(2.5))):
        np.testing.assert_allclose(a.values, b.values, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(a.squared_weight_constituents, b.squared_weight_constituents, rtol=1e-12)
        np.testing.assert_allclose(a.errors, b.errors, rtol=1e-12)
        assert a.uncertainty_status == b.uncertainty_status
        assert (a.reported_errors is None) == (b.reported_errors is None)
        da, db = a.diagnostics, b.diagnostics
        assert (da.out_of_range_count, da.nonfinite_count) == (db.out_of_range_count, db.nonfinite_count)
        assert da.out_of_range_weight == pytest.approx(db.out_of_range_weight, rel=1e-12)
    assert theirs.diagnostics.out_of_range_count > 0
    back = laddu.JointHistogram.from_json(ours.to_json())  # laddu reads our JSON
    np.testing.assert_allclose(back.values, theirs.values, rtol=1e-12, atol=1e-12)
    assert np.array_equal(ld.JointHistogram.from_json(json=theirs.to_json()).values, theirs.values)
    ours.merge(ours2)
    theirs.merge(theirs2)
    np.testing.assert_allclose(ours.values, theirs.values, rtol=1e-12, atol=1e-12)


def test_joint_histogram_counts_nonfinite_events_as_laddu():
    """laddu-dask refuses non-finite data when it reads it, so non-finite axis values and
    weights come from expressions here (``1 / 0``); out of range counts only finite events."""
    columns = {"x": np.array([0.1, 0.2, 0.7, 1.0, -0.2, 0.3]), "y": np.array([0.1, 0.0, -1.0, 0.5, 0.6, 2.0])}
    results = []
    for lib in (ld, laddu):
        ds = lib.Dataset.from_arrays(p4s={"b": np.tile([1.0, 0, 0, 0], (6, 1))}, scalars=columns,
                                     weights=np.arange(6.0) + 1)
        x, y = lib.scalar("x"), lib.scalar("y")
        edges = [[0.0, 0.5, 1.0], [-20.0, 0.0, 20.0]]
        results.append(ds.joint_histogram([x, 1.0 / (x - 0.3)], bin_edges=edges, weight=1.0 / y))
    ours, theirs = results
    np.testing.assert_allclose(ours.values, theirs.values, rtol=1e-12)
    d = theirs.diagnostics
    assert (d.nonfinite_count, d.out_of_range_count) == (2, 2)  # y = 0 and x = 0.3; x = 1.0 and x = -0.2
    assert ours.diagnostics == ld.JointHistogramDiagnostics(d.nonfinite_count, d.nonfinite_weight,
                                                            d.out_of_range_count, d.out_of_range_weight)
    ds = ld.Dataset.from_arrays(scalars=columns)
    with pytest.raises(ModelError, match="joint_histogram needs real-valued axes and weight"):
        ds.joint_histogram([1j * ld.scalar("x")], bin_edges=[[0.0, 1.0]])
    with pytest.raises(ModelError, match="one list of bin edges per axis .at least one axis., got 2 for 1"):
        ds.joint_histogram([ld.scalar("x")], bin_edges=[[0, 1], [0, 1]])
    with pytest.raises(ModelError, match=r"bin edges of axis 0 must be at least two finite, strictly"):
        ds.joint_histogram([ld.scalar("x")], bin_edges=[[1.0, 0.0]])


def test_smaller_differences_of_the_readme_table(files):
    """Rows of the README's difference table: the schema says whether weights are stored;
    any two histograms of the same edges merge (the format API: tests/data/test_io_formats.py)."""
    assert ld.read_parquet(files["plain"]).schema.has_weight is False
    assert laddu.read_parquet(files["plain"]).schema.weights is True  # laddu: always effective weights
    filled = ld.Histogram.from_values_with_edges([0.5, 1.5], bin_edges=[0.0, 1.0, 2.0])
    filled.merge(ld.Histogram([1.0, 2.0], bin_edges=[0.0, 1.0, 2.0], errors=[0.5, 0.5]))
    assert filled.counts == [2.0, 3.0]
    with pytest.raises(laddu.LadduError, match="identical fill and uncertainty policies"):
        laddu.Histogram.from_values_with_edges([0.5, 1.5], bin_edges=[0.0, 1.0, 2.0]).merge(
            laddu.Histogram([1.0, 2.0], bin_edges=[0.0, 1.0, 2.0], errors=[0.5, 0.5]))


# ----------------------------------------------------------------------------- to_json / from_json


def _json_cases():
    from tutorial_models import coupled_channel, polarized

    x = ld.scalar("x")
    return {
        "ksks bw": ksks.model("bw").source,
        "polarized tutorial": polarized.build_model(ld).source,
        "coupled channel": coupled_channel.breit_wigner_models(ld)[0].source,
        "tags, complex constants, powers": (
            (ld.cparameter("c", initial=1 - 2j) * x ** 3).tagged("S").tagged("T")
            + (x.sqrt() * 0.1j).tagged("D")).norm_sqr(),
        "parameter settings": ld.parameter("p", initial=(0.1, 0.9), bounds=(0.0, 1.0), periodic=False,
                                           unit="GeV", latex="p", description="a range") * x
        + ld.parameter("f", fixed=2.0) + float("inf") * 0.0,
    }


@pytest.mark.parametrize("case", ["ksks bw", "polarized tutorial", "coupled channel",
                                  "tags, complex constants, powers", "parameter settings"])
def test_expressions_and_models_round_trip_through_json(case):
    expr = _json_cases()[case]
    assert ld.Expr.from_json(expr.to_json()) is expr  # the same interned node: every bit kept
    model = ld.Model(expr)
    back = ld.Model.from_json(json=model.to_json(), exact_solver_seconds=1.0)
    assert back.source is model.source and back.parameter_names == model.parameter_names
    assert back.parameters == model.parameters and list(back.parameters) == list(model.parameters)


def test_vectors_round_trip_through_json():
    p = ld.Vec4.event("beam") + ld.Vec4(1.0, 0.0, 0.0, ld.scalar("pz"))
    assert all(a is b for a, b in zip(ld.Vec4.from_json(p.to_json()), p, strict=True))
    q = ld.Vec3.event("beam")
    assert all(a is b for a, b in zip(ld.Vec3.from_json(json=q.to_json()), q, strict=True))


@pytest.mark.parametrize("spec", ["2 GiB", "60% available", "50%", 1000, ("percent_total", 10.0),
                                  ("percent_available", 37.5), ("bytes", 5)])
def test_memory_budgets_and_plans_speak_laddus_json(spec):
    """The same JSON as laddu's, both ways; laddu's static constructors."""
    def build(lib):
        if isinstance(spec, tuple):
            return getattr(lib.MemoryBudget, spec[0])(spec[1])
        return lib.MemoryBudget(spec)

    ours, theirs = build(ld), build(laddu)
    assert json.loads(ours.to_json()) == json.loads(theirs.to_json())
    assert ld.MemoryBudget.from_json(theirs.to_json()) == ours
    assert json.loads(laddu.MemoryBudget.from_json(ours.to_json()).to_json()) == json.loads(theirs.to_json())
    for device in (None, spec):
        mine = ld.MemoryPlan(host=ours, device=None if device is None else build(ld))
        laddus = laddu.MemoryPlan(host=theirs, device=None if device is None else build(laddu))
        assert json.loads(mine.to_json()) == json.loads(laddus.to_json())
        assert ld.MemoryPlan.from_json(json=laddus.to_json()) == mine


def test_bad_budget_json_and_bins_json():
    assert ld.MemoryBudget.from_json(ld.MemoryBudget(None).to_json()).unlimited  # laddu-dask's own
    with pytest.raises(BudgetError, match="MemoryBudget.from_json: not a budget laddu-dask has: '\"auto\"'"):
        ld.MemoryBudget.from_json(laddu.MemoryBudget("auto").to_json())  # laddu's automatic planning
    with pytest.raises(BudgetError, match=r"a memory percentage must be a number in \(0, 100\], got 150"):
        ld.MemoryBudget.percent_total(150)
    with pytest.raises(TypeError, match="MemoryBudget.bytes takes an int, got float"):
        ld.MemoryBudget.bytes(1.5)
    with pytest.raises(BudgetError, match="MemoryPlan.from_json needs"):
        ld.MemoryPlan.from_json('{"host": 1}')
    edges = [0.0, 0.25, 1.5, 4.0]
    assert ld.Bin(edges).to_json() == laddu.Bin(edges).to_json().replace(",", ", ")
    assert ld.Bin.from_json(laddu.Bin(edges).to_json()).edges == edges
    assert laddu.Bin.from_json(ld.Bin(edges).to_json()).edges == edges
    with pytest.raises(ModelError, match="bin edges must be finite and strictly increasing"):
        ld.Bin.from_json("[1.0, 0.0]")
    with pytest.raises(ModelError, match="Bin.from_json needs a JSON list of edges"):
        ld.Bin.from_json('{"edges": [0, 1]}')


def _histograms(lib):
    edges = [0.0, 1.0, 2.0]
    filled = lib.Histogram.from_values_with_edges([0.5, 1.5, -1.0, 3.0, 1.7], bin_edges=edges,
                                                  weights=[1.0, 2.0, 3.0, 4.0, -0.5])
    other = lib.Histogram.from_values_with_edges([0.2, 1.2, 5.0], bin_edges=edges, weights=[2.0, 5.0, 1.0])
    given = lib.Histogram([3.0, 1.0], bin_edges=edges, errors=[0.5, 0.25])
    plain = lib.Histogram([1.0, 2.0], bin_edges=edges, underflow=0.5)
    filled.fill(-2.0, weight=1.5)
    return {"filled": filled, "add": filled.add(other), "+": filled + other, "-": filled - other,
            "add independent": filled.add(other, independent=True), "subtract": filled.subtract(other),
            "subtract independent": filled.subtract(other, independent=True),
            "scaled": filled.scaled(-2.0), "*": 3.0 * filled, "density": filled.density(),
            "normalized": filled.normalized(), "normalized with flows": filled.normalized(include_flow=True),
            "given": given, "given + given": given + given, "plain": plain, "plain + given": plain + given,
            "plain add independent": plain.add(plain, independent=True),
            "plain normalized": plain.normalized()}


def test_histogram_arithmetic_status_and_squares_are_laddus():
    ours, theirs = _histograms(ld), _histograms(laddu)
    for name, want in theirs.items():
        got = ours[name]
        np.testing.assert_allclose(got.counts, want.counts, rtol=1e-13, err_msg=name)
        np.testing.assert_allclose(got.errors, want.errors, rtol=1e-13, err_msg=name)
        assert got.uncertainty_status == want.uncertainty_status, name
        assert (got.reported_errors is None) == (want.reported_errors is None), name
        assert got.underflow == pytest.approx(want.underflow, rel=1e-13), name
        assert got.overflow == pytest.approx(want.overflow, rel=1e-13), name
        bins, low, high = got.squared_weight_constituents()
        wbins, wlow, whigh = want.squared_weight_constituents()
        np.testing.assert_allclose(bins, wbins, rtol=1e-13, err_msg=name)
        assert (low is None, high is None) == (wlow is None, whigh is None), name
        if wlow is not None:
            assert (low, high) == pytest.approx((wlow, whigh), rel=1e-13), name
