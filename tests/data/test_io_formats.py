"""laddu 0.28.1's plug-in format API (``ld.io.FormatSpec`` and friends) against laddu itself.

A format is an object: a user's ``FormatSpec`` reads the same events as laddu's same spec
(bitwise), through ``spec.read``, ``Dataset(spec.source(...))`` and, once registered,
``ld.io.read(path)``; laddu-dask's Parquet and ROOT readers are the registered formats
``"parquet"`` and ``"root"`` that ``read_parquet``, ``read_root``, ``ParquetSource`` and
``RootSource`` go through. Plans cover every event exactly once; ``check_partitioning``
agrees with laddu's on good and bad readers; ``convert`` writes the same bytes as laddu's
and never replaces a file.
"""

from __future__ import annotations

import itertools
import json
import os

import numpy as np
import pytest
from laddu_reference import laddu, needs_laddu
from test_io_laddu_keywords import _same_dataset, _values

import laddu_dask as ld
from laddu_dask import ksks
from laddu_dask.data.plans import assigned_rows
from laddu_dask.errors import DataError, SchemaError, UnsafeOutputError
from laddu_dask.jobs import main

pytestmark = needs_laddu


# ----------------------------------------------------------------------------- a user's format


def _toy_events(n: int = 23) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(7)
    return {"k": rng.normal(size=(n, 4)), "s": rng.uniform(size=n), "w": rng.uniform(-1, 2, size=n)}


def _write_toy(path, events) -> None:
    np.savez(path, k=events["k"], s=events["s"], w=events["w"])


def toy_format(io, *, native=None, calls=None, wrong_rank=None, rows_for=None):
    """One ``.npz`` format, written the same for both libraries (``io`` is ``ld.io`` or laddu's):
    four-vector ``k``, scalar ``s``, weights; rows by the plan's rank when ``native`` is given."""

    def describe(source, *, options):
        n = len(np.load(source)["s"])
        return io.SourceInfo(io.Schema(p4s=["k"], scalars=["s"], weights=True), length=n)

    def read_batches(source, *, options, plan):
        if calls is not None:
            calls.append((plan.rank, plan.nranks, plan.chunk_size, plan.partitioning))
        data = np.load(source)
        n = len(data["s"])
        if plan.nranks == 1:
            rows = np.arange(n)
        elif rows_for is not None:
            rows = rows_for(plan.rank, n)
        elif plan.partitioning == "rows":
            rows = np.arange(plan.rank, n, plan.nranks)
        else:  # laddu's contiguous blocks, written out
            rows = np.arange(plan.rank * n // plan.nranks, (plan.rank + 1) * n // plan.nranks)
        scale = 2.0 if plan.nranks > 1 and plan.rank == wrong_rank else 1.0
        for a in range(0, len(rows), plan.chunk_size):
            r = rows[a : a + plan.chunk_size]
            yield io.EventBatch(
                p4s={"k": data["k"][r]},
                scalars={"s": data["s"][r] * scale},
                weights=data["w"][r],
                row_ids=r.tolist(),
            )

    def write_batches(target, batches, *, options, schema, plan):
        with open(target, "wb") as f:  # opened first, as a streaming writer does
            parts = [(np.asarray(b.p4s["k"]), np.asarray(b.scalars["s"]), np.asarray(b.weights))
                     for b in batches]
            np.savez(
                f,
                k=np.concatenate([p[0] for p in parts]),
                s=np.concatenate([p[1] for p in parts]),
                w=np.concatenate([p[2] for p in parts]),
            )

    return io.FormatSpec(
        name="toy",
        describe=describe,
        read_batches=read_batches,
        write_batches=write_batches,
        extension="npz",
        native_partitioning=native,
    )


@pytest.fixture()
def toy(tmp_path):
    path = str(tmp_path / "events.npz")
    _write_toy(path, _toy_events())
    return path


@pytest.mark.parametrize("native", [None, ["contiguous"]])
def test_a_users_format_reads_what_laddus_reads(toy, native):
    theirs = toy_format(laddu.io, native=native).read(toy)
    spec = toy_format(ld.io, native=native)
    assert (spec.name, spec.native_partitioning) == ("toy", native or [])
    for ours in (
        spec.read(toy),
        ld.Dataset(spec.source(toy)),
        ld.Dataset(source=spec.source(toy, cache="streaming")),
    ):
        _same_dataset(ours, theirs)
    ld.io.register_format(spec, suffixes=[".npz"])
    try:
        assert ld.io.format_for(toy) is spec and ld.io.formats()["toy"] is spec
        _same_dataset(ld.io.read(toy), theirs)
        _same_dataset(ld.io.read(toy, format="toy"), theirs)
        with pytest.raises(ValueError, match="a format named 'toy' is registered already"):
            ld.io.register_format(toy_format(ld.io))
    finally:
        ld.io.unregister_format("toy")
    with pytest.raises(ValueError, match=r"no registered format reads '.*events.npz'"):
        ld.io.read(toy)


def test_a_contiguous_format_reads_one_rank_per_partition(toy):
    """With native contiguous partitioning each partition is one rank of the reader: the ranks'
    rows cover every event once, in order (the values equal a serial read bitwise)."""
    calls = []
    ds = toy_format(ld.io, native=["contiguous"], calls=calls).read(toy).with_chunk_size(5)
    a, b = _values(ld, ds), _values(ld, toy_format(ld.io).read(toy))
    assert all(a[c].tobytes() == b[c].tobytes() for c in b) and len(a["s"]) == 23
    k = ds.n_partitions
    assert sorted({c[:2] for c in calls if c[1] > 1}) == [(r, k) for r in range(k)]
    assert [p.n_events for p in ds.partitions] == [
        len(assigned_rows(23, r, k, "contiguous")) for r in range(k)
    ]
    assert max(p.n_events for p in ds.partitions) <= 5


def _broken(io, fault):
    """The toy format with one fault: a length that lies, batches twice the plan's size, or a
    scalar the schema does not declare."""

    def describe(source, *, options):
        n = len(np.load(source)["s"]) - (3 if fault == "length" else 0)
        return io.SourceInfo(io.Schema(p4s=["k"], scalars=["s"], weights=True), length=n)

    def read_batches(source, *, options, plan):
        data = np.load(source)
        step = plan.chunk_size * (2 if fault == "size" else 1)
        for a in range(0, len(data["s"]), step):
            r = slice(a, a + step)
            scalars = {"s": data["s"][r]} | ({"t": data["s"][r]} if fault == "field" else {})
            yield io.EventBatch(p4s={"k": data["k"][r]}, scalars=scalars, weights=data["w"][r])

    return io.FormatSpec(name="toy", describe=describe, read_batches=read_batches)


@pytest.mark.parametrize(("fault", "ours", "theirs"), [
    ("length", r"format 'toy' source .*events.npz.* gave 23 events .* 20 were declared", "declared length"),
    ("size", r"format 'toy' source .*events.npz.* yielded a batch of 8 events, more than the plan's "
             "chunk_size=4", "exceeds plan.chunk_size"),
    ("field", r"format 'toy' source .*events.npz.* yielded a batch of fields .*'t'.* the declared schema",
     "does not match declared schema"),
])
def test_a_reader_that_breaks_its_promises_is_an_error_as_in_laddu(toy, fault, ours, theirs):
    with pytest.raises((DataError, SchemaError), match=ours):
        list(_broken(ld.io, fault).read(toy).batches(chunk_size=4))
    with pytest.raises(laddu.LadduError, match=theirs):
        list(_broken(laddu.io, fault).read(toy).batches(chunk_size=4))


@pytest.mark.parametrize("n", [0, 1, 5, 23, 64])
@pytest.mark.parametrize("nranks", [1, 2, 3, 7])
@pytest.mark.parametrize("strategy", ["contiguous", "rows"])
def test_plans_cover_every_event_exactly_once(n, nranks, strategy):
    ranks = [list(assigned_rows(n, r, nranks, strategy)) for r in range(nranks)]
    flat = list(itertools.chain.from_iterable(ranks))
    assert sorted(flat) == list(range(n))  # every event, none twice
    if strategy == "contiguous":  # blocks in rank order, of n // nranks events or one more
        assert flat == list(range(n))
        assert {len(r) for r in ranks} <= {n // nranks, n // nranks + 1}


@pytest.mark.parametrize("native", [["contiguous"], ["rows"], ["contiguous", "rows"]])
def test_check_partitioning_passes_a_faithful_reader_as_laddu_does(toy, native):
    assert toy_format(laddu.io, native=native).check_partitioning(toy, nranks=3, chunk_size=4) is None
    assert toy_format(ld.io, native=native).check_partitioning(toy, nranks=3, chunk_size=4) is None


@pytest.mark.parametrize("strategy", ["contiguous", "rows"])
def test_check_partitioning_finds_a_rank_that_disagrees_as_laddu_does(toy, strategy):
    with pytest.raises(ValueError, match=f"{strategy} partition rank 1 disagrees with serial event"):
        toy_format(laddu.io, native=[strategy], wrong_rank=1).check_partitioning(toy, nranks=3, chunk_size=4)
    with pytest.raises(
        DataError,
        match=f"format 'toy' source .*events.npz.*: {strategy} partition rank 1 disagrees with serial event",
    ):
        toy_format(ld.io, native=[strategy], wrong_rank=1).check_partitioning(toy, nranks=3, chunk_size=4)


def _everything(rank, n):
    return np.arange(n)


def _half(rank, n):
    return np.arange(n // 2) if rank == 0 else np.arange(0)


@pytest.mark.parametrize(
    ("rows_for", "ours", "theirs"),
    [
        (
            _everything,
            "file_groups partition ranks 0 and 1 both gave event 0",
            "file_groups partition rank 1",
        ),
        (_half, r"file_groups partitions of 2 ranks miss 12 event\(s\), first 11", "do not cover the source"),
    ],
)
def test_check_partitioning_finds_missing_and_repeated_events(toy, rows_for, ours, theirs):
    spec = toy_format(ld.io, native=["file_groups"], rows_for=rows_for)
    with pytest.raises(DataError, match=ours):
        spec.check_partitioning(toy, nranks=2, chunk_size=4)
    with pytest.raises(ValueError, match=theirs):  # laddu finds them too
        toy_format(laddu.io, native=["file_groups"], rows_for=rows_for).check_partitioning(
            toy, nranks=2, chunk_size=4
        )


# ----------------------------------------------------------------------------- Parquet and ROOT


@pytest.fixture(scope="module")
def sample_files(tmp_path_factory):
    """400 weighted events, two four-vectors and a scalar: Parquet by laddu-dask, ROOT by laddu."""
    folder = tmp_path_factory.mktemp("formats")
    rng = np.random.default_rng(26)
    p4s = {name: rng.normal(size=(400, 4)) for name in ("beam", "kshort1")}
    ld.Dataset.from_arrays(
        p4s=p4s, scalars={"pol": rng.uniform(size=400)}, weights=rng.uniform(-0.5, 2.0, 400)
    ).write_to(ld.ParquetSink(folder / "events.parquet"))
    laddu.read_parquet(str(folder / "events.parquet")).write_to(
        laddu.RootSink(str(folder / "events.root"), tree="kin")
    )
    return {"parquet": str(folder / "events.parquet"), "root": str(folder / "events.root")}


def test_parquet_and_root_sources_read_what_laddus_read(sample_files):
    _same_dataset(
        ld.Dataset(ld.ParquetSource(sample_files["parquet"])),
        laddu.Dataset(laddu.ParquetSource(sample_files["parquet"])),
    )
    _same_dataset(
        ld.Dataset(source=ld.RootSource(sample_files["root"], tree="kin", cache="streaming")),
        laddu.Dataset(laddu.RootSource(sample_files["root"], tree="kin", cache="streaming")),
    )
    selected = {"p4s": ["kshort1", "beam"], "weights": True}
    _same_dataset(
        ld.Dataset(ld.ParquetSource(sample_files["parquet"], schema=ld.Schema(**selected))),
        laddu.Dataset(laddu.ParquetSource(sample_files["parquet"], schema=laddu.Schema(**selected))),
        selected=True,
    )


def test_sources_check_their_input_when_made(sample_files, tmp_path):
    missing = str(tmp_path / "none.parquet")
    with pytest.raises(FileNotFoundError, match="none.parquet"):
        ld.ParquetSource(missing)
    with pytest.raises(SchemaError, match=r"schema= needs column 'nope' which .*events.parquet lacks"):
        ld.ParquetSource(sample_files["parquet"], schema=ld.Schema(scalars=["nope"]))
    with pytest.raises(DataError, match=r"events.root.*'nope'"):
        ld.RootSource(sample_files["root"], tree="nope")
    with pytest.raises(ValueError, match="cache"):
        ld.ParquetSource(sample_files["parquet"], cache="sometimes")
    with pytest.raises(
        TypeError, match="Dataset.source=. must be a ParquetSource, RootSource or FormatSource"
    ):
        ld.Dataset(source=3)
    with pytest.raises(TypeError, match="format 'parquet' has no option.s. 'nul'"):
        ld.io.formats()["parquet"].read(sample_files["parquet"], options={"nul": "nan"})


def test_read_parquet_and_read_root_go_through_the_registry(sample_files):
    """Replacing the registered "parquet" format changes what read_parquet reads: the readers
    are the registry's, with their keywords as the format's options."""
    builtin = ld.io.formats()["parquet"]
    seen = []

    def read_batches(source, *, options, plan):
        seen.append(options)
        yield from ()

    def describe(source, *, options):
        return ld.io.SourceInfo(ld.io.Schema(scalars=["x"]), length=0)

    ld.io.register_format(
        ld.io.FormatSpec(name="parquet", describe=describe, read_batches=read_batches), replace=True
    )
    try:
        assert len(ld.read_parquet(sample_files["parquet"], nulls="nan")) == 0
        assert ld.read_parquet(sample_files["parquet"]).scalar_names() == ["x"]
    finally:
        ld.io.register_format(builtin, replace=True)
    assert len(ld.read_parquet(sample_files["parquet"])) == 400
    assert ld.io.format_for(sample_files["root"]).name == "root"


# ----------------------------------------------------------------------------- writing and convert


def test_convert_writes_what_laddus_convert_writes(toy, tmp_path):
    ours, theirs = str(tmp_path / "ours.npz"), str(tmp_path / "theirs.npz")
    r = ld.io.convert(toy, ours, reader=toy_format(ld.io), writer=toy_format(ld.io), chunk_size=4)
    q = laddu.io.convert(toy, theirs, reader=toy_format(laddu.io), writer=toy_format(laddu.io), chunk_size=4)
    assert (
        (r.paths, r.counts, r.events) == ([tmp_path / "ours.npz"], q.counts, q.events) == (r.paths, [23], 23)
    )
    a, b = np.load(ours), np.load(theirs)
    for key in ("k", "s", "w"):
        assert a[key].tobytes() == b[key].tobytes()


def test_convert_parquet_to_root_keeps_every_event(sample_files, tmp_path):
    target = tmp_path / "out" / "events.root"
    fmt = ld.io.formats()
    result = ld.io.convert(
        sample_files["parquet"],
        target,
        reader=fmt["parquet"],
        writer=fmt["root"],
        write_options={"tree": "kin"},
    )
    assert result.paths == [target] and result.events == 400
    _same_dataset(ld.read_root(str(target), tree="kin"), laddu.read_parquet(sample_files["parquet"]))


def test_convert_never_replaces_a_file_and_checks_before_reading(toy, tmp_path):
    target = tmp_path / "taken.npz"
    target.write_bytes(b"the user's file")
    calls = []
    with pytest.raises(UnsafeOutputError, match=f"convert refuses to replace {target}: it exists"):
        ld.io.convert(toy, target, reader=toy_format(ld.io, calls=calls), writer=toy_format(ld.io))
    assert target.read_bytes() == b"the user's file" and calls == []
    before = set(os.listdir(tmp_path))
    fresh = tmp_path / "fresh.npz"
    with pytest.raises(
        TypeError, match=r"convert\(reader=\) must be a laddu_dask.io.FormatSpec, got NoneType"
    ):
        ld.io.convert(toy, fresh, reader=None, writer=toy_format(ld.io))
    with pytest.raises(ValueError, match="output must be 'auto', 'single' or 'sharded', got 'bogus'"):
        ld.io.convert(toy, fresh, reader=toy_format(ld.io), writer=toy_format(ld.io), output="bogus")
    with pytest.raises(ValueError, match="chunk_size"):
        ld.io.convert(toy, fresh, reader=toy_format(ld.io), writer=toy_format(ld.io), chunk_size=0)
    assert set(os.listdir(tmp_path)) == before and calls == []


def test_a_failed_conversion_leaves_no_output(tmp_path):
    """A non-finite value found mid-stream: a DataError naming the column, and no file."""
    source = str(tmp_path / "bad.npz")
    events = _toy_events()
    events["s"][17] = np.nan
    _write_toy(source, events)
    target = tmp_path / "out.npz"
    with pytest.raises(DataError, match=r"column 's'.*event 17"):
        ld.io.convert(source, target, reader=toy_format(ld.io), writer=toy_format(ld.io), chunk_size=4)
    assert sorted(os.listdir(tmp_path)) == ["bad.npz"]


def test_a_formats_sink_and_write_as_laddus(toy, tmp_path):
    ours = toy_format(ld.io).read(toy)
    spec = toy_format(ld.io)
    r = ours.write_to(spec.sink(tmp_path / "a.npz"))
    s = spec.write(ours, tmp_path / "shards", output="sharded")
    assert r.paths == [tmp_path / "a.npz"] and s.paths == [tmp_path / "shards" / "part-rank00000-of00001.npz"]
    theirs = toy_format(laddu.io).read(toy)
    t = toy_format(laddu.io).write(theirs, tmp_path / "theirs", output="sharded")
    assert [p.name for p in t.paths] == [p.name for p in s.paths]
    _same_dataset(spec.read(str(r.paths[0])), toy_format(laddu.io).read(str(t.paths[0])))
    with pytest.raises(TypeError, match="format 'w' cannot read: it has no read_batches"):
        ld.io.FormatSpec(name="w", write_batches=lambda *a, **k: None).read(toy)
    with pytest.raises(ValueError, match="a format needs a name and a reader or writer"):
        ld.io.FormatSpec(name="nothing")


# ----------------------------------------------------------------------------- batches and schemas


def _factory(io):
    k, s, w = _toy_events(10).values()

    def factory(*, chunk_size, rank, nranks):
        step = min(chunk_size, 4)
        for a in range(0, 10, step):
            yield {
                "p4s": {"k": k[a : a + step]},
                "scalars": {"s": s[a : a + step]},
                "weights": w[a : a + step],
            }

    return factory


def test_from_batches_reads_what_laddus_reads():
    schema = {"p4s": ["k"], "scalars": ["s"], "weights": True}
    theirs = laddu.Dataset.from_batches(_factory(laddu.io), schema=schema)
    _same_dataset(ld.Dataset.from_batches(_factory(ld.io), schema=schema), theirs)
    _same_dataset(
        ld.Dataset.from_batches(
            _factory(ld.io), schema=ld.io.Schema(**schema), length=10, cache="streaming"
        ).with_chunk_size(3),
        theirs,
    )
    with pytest.raises(TypeError, match="batch_factory=. must be callable, got int"):
        ld.Dataset.from_batches(3, schema=schema)
    with pytest.raises(ValueError, match="schema is missing 'scalars'"):
        ld.Dataset.from_batches(_factory(ld.io), schema={"p4s": ["k"]})
    with pytest.raises(
        SchemaError, match="batch factory factory yielded a batch of fields .* the declared schema"
    ):
        len(ld.Dataset.from_batches(_factory(ld.io), schema={"p4s": ["zz"], "scalars": ["s"]}))


def test_event_batch_takes_laddus_keywords():
    kw = {
        "p4s": {"k": np.arange(8.0).reshape(2, 4)},
        "scalars": {"s": np.array([1.0, 2.0])},
        "row_ids": [5, 7],
        "columns": {"run": np.array([3, 4], dtype=np.int16)},
    }
    ours, theirs = ld.io.EventBatch(**kw), laddu.io.EventBatch(**kw)
    assert (
        (len(ours), ours.length, ours.row_ids)
        == (len(theirs), theirs.length, theirs.row_ids)
        == (2, 2, [5, 7])
    )
    assert np.array_equal(ours.p4s["k"], theirs.p4s["k"]) and np.array_equal(
        ours.scalars["s"], theirs.scalars["s"]
    )
    assert (ours.schema.p4s, ours.schema.columns, ours.schema.weights) == (("k",), {"run": "int16"}, False)
    assert (theirs.schema.p4s, theirs.schema.columns, theirs.schema.weights) == (
        ("k",),
        {"run": "int16"},
        False,
    )
    assert len(ld.io.EventBatch(length=3)) == len(laddu.io.EventBatch(length=3)) == 3
    with pytest.raises(DataError, match="length=3 disagrees with the 2 events"):
        ld.io.EventBatch(scalars={"s": np.ones(2)}, length=3)
    with pytest.raises(DataError, match="row_ids holds 1 ids for a batch of 2 events"):
        ld.io.EventBatch(scalars={"s": np.ones(2)}, row_ids=[1])
    with pytest.raises(DataError, match=r"p4 column 'k' must be numbers of shape \(events, 4\)"):
        ld.io.EventBatch(p4s={"k": np.ones((2, 3))})


def test_schema_columns_is_laddus_property():
    for lib in (ld, laddu):
        assert lib.Schema(p4s=["a"], scalars=["b"], weights=True).columns == {}
        assert lib.io.Schema(p4s=["a"], columns={"run": "int32"}).columns == {"run": "int32"}
    assert ld.Schema(p4s=["a"], scalars=["b"]).flat_columns() == ["a_e", "a_px", "a_py", "a_pz", "b"]
    with pytest.raises(SchemaError, match="column 'run' must have an integer dtype"):
        ld.Schema(columns={"run": "float64"})


def test_from_arrays_takes_laddus_integer_columns():
    kw = {
        "p4s": {"k": np.ones((3, 4))},
        "scalars": {"s": np.arange(3.0)},
        "columns": {"run": np.array([7, -2, 2**40], dtype=np.int64)},
    }
    ours, theirs = ld.Dataset.from_arrays(**kw), laddu.Dataset.from_arrays(**kw)
    assert ours.column_names() == theirs.column_names() == ["s", "run"]
    assert ours.column("run").dtype == theirs.column("run").dtype == np.int64
    assert ours.column("run").tolist() == theirs.column("run").tolist()
    assert ours.schema.columns == theirs.schema.columns == {"run": "int64"}
    with pytest.raises(SchemaError, match="column 'run' must have an integer dtype"):
        ld.Dataset.from_arrays(scalars={"s": np.ones(2)}, columns={"run": np.ones(2)})
    with pytest.raises(DataError, match=r"column 'run' holds .* beyond 2\*\*53"):
        ld.Dataset.from_arrays(scalars={"s": np.ones(1)}, columns={"run": np.array([2**60])})
    with pytest.raises(SchemaError, match=r"\['run'\] given as both scalars and columns"):
        ld.Dataset.from_arrays(scalars={"run": np.ones(2)}, columns={"run": np.array([1, 2])})


def test_batch_iterator_closes_on_exit():
    with ld.Dataset.from_arrays(scalars={"x": np.arange(5.0)}).batches(chunk_size=2) as it:
        assert len(next(it)) == 2
    it.__exit__(None, None, None)  # laddu's signature, by position
    with pytest.raises(RuntimeError, match="batch iterator is closed"):
        next(it)


# ----------------------------------------------------------------------------- the TOML job


def test_a_batch_job_reads_root_through_the_registry(tmp_path, capsys):
    """A job's datasets are read by the registered format of their paths (or ``format =``): the
    same sample as ROOT files fits to the same minimum, bitwise, as the Parquet files."""
    paths = ksks.write_sample(tmp_path, n_data=200, n_mc=1000, seed=26)
    fmt = ld.io.formats()
    for name in ("data", "accmc"):
        ld.io.convert(paths[name], tmp_path / f"{name}.root", reader=fmt["parquet"], writer=fmt["root"])
    results = {}
    for kind, extra in (("parquet", ""), ("root", ""), ("named", 'format = "root"\n')):
        suffix = "parquet" if kind == "parquet" else "root"
        config = tmp_path / f"{kind}.toml"
        config.write_text(
            'model = { builtin = "ksks", fixed_lineshapes = true }\n[fit]\nmethod = "lbfgsb"\n'
            f'[data]\npath = "data.{suffix}"\n{extra}[accmc]\npath = "accmc.{suffix}"\n{extra}'
        )
        assert main([str(config), "--output", str(tmp_path / f"{kind}.json")]) == 0
        results[kind] = json.loads((tmp_path / f"{kind}.json").read_text())
    assert results["root"]["terms"][0]["data_events"] == 200
    assert results["root"]["fval"] == results["parquet"]["fval"] == results["named"]["fval"]
    config = tmp_path / "bad.toml"
    config.write_text('model = { builtin = "ksks" }\n[data]\npath = "data.root"\nformat = "nope"\n'
                      '[accmc]\npath = "accmc.root"\n')
    capsys.readouterr()
    assert main([str(config)]) == 2
    assert "no format named 'nope' is registered (registered: parquet, root)" in capsys.readouterr().err


def test_schema_equality_ignores_integer_declarations_where_laddus_compares_them():
    """The README's difference row: laddu-dask holds a declared integer column as a float64
    scalar, so its schemas compare four-vectors, scalars and weight only; laddu's differ."""
    declared = {"run": "int32"}
    ours = (ld.io.Schema(p4s=["k"], columns=declared), ld.io.Schema(p4s=["k"], scalars=["run"]),
            ld.io.Schema(p4s=["k"], columns={"run": "int64"}))
    theirs = (laddu.io.Schema(p4s=["k"], columns=declared), laddu.io.Schema(p4s=["k"], scalars=["run"]),
              laddu.io.Schema(p4s=["k"], columns={"run": "int64"}))
    assert (ours[0] == ours[1], ours[0] == ours[2], ours[0].scalars) == (True, True, ("run",))
    assert (theirs[0] == theirs[1], theirs[0] == theirs[2], theirs[0].scalars) == (False, False, ())
    assert ours[0].columns == theirs[0].columns == declared  # the declarations come back the same
