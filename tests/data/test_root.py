"""ROOT files through uproot: laddu's branch names and the AmpTools flat tree (issue 12, item 2).

Every round trip is checked bit for bit against an independent reader or writer of the same
file: uproot itself (arrays read or written directly), and laddu 0.28.1's ``read_root`` /
``RootSink`` (laddu reads ROOT with oxyroot, not uproot). A likelihood on a ROOT file equals
the same events from Parquet to the last bit, streamed or resident.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

import laddu_dask as ld
from laddu_dask import ksks
from laddu_dask.data.schema import P4_COMPONENTS
from laddu_dask.errors import DataChangedError, DataError, SchemaError

uproot = pytest.importorskip("uproot")
ak = pytest.importorskip("awkward")

NAMES = ["beam", "proton", "kshort1", "kshort2"]
AMPTOOLS = ("E", "Px", "Py", "Pz")


def _arrays(n: int, seed: int = 0) -> tuple[dict, dict, np.ndarray]:
    rng = np.random.default_rng(seed)
    p4s = {name: rng.normal(size=(n, 4)) * 10.0 ** i for i, name in enumerate(NAMES)}
    return p4s, {"pol": rng.uniform(-1, 1, n)}, rng.normal(1.0, 0.5, n)


def _concat(ds: ld.Dataset, columns=None) -> tuple[dict, np.ndarray]:
    batches = [ds.load_partition(i, columns) for i in range(ds.n_partitions)]
    cols = {c: np.concatenate([b.columns[c] for b in batches]) for c in batches[0].columns}
    return cols, np.concatenate([b.weights for b in batches])


def _flat(p4s: dict, scalars: dict) -> dict[str, np.ndarray]:
    out = {f"{n}_{c}": a[:, j] for n, a in p4s.items() for j, c in enumerate(P4_COMPONENTS)}
    return out | scalars


def _amptools_tree(path, p4s: dict, weights=None, extra=None, baskets=1, final=None) -> None:
    """An AmpTools tree written by uproot itself (the final state as one record, counted by
    NumFinalState), in ``baskets`` baskets."""
    names = list(p4s)
    n = len(p4s[names[0]])
    final = final or {}
    with uproot.recreate(path) as f:
        cols = {f"{c}_Beam": p4s[names[0]][:, j].astype(np.float32) for j, c in enumerate(AMPTOOLS)}
        block = np.stack([p4s[m] for m in names[1:]], axis=1).astype(np.float32)  # (n, k, 4)
        counts = np.full(n, len(names) - 1)
        record = {c: ak.unflatten(block[:, :, j].reshape(-1), counts) for j, c in enumerate(AMPTOOLS)}
        cols["FinalState"] = ak.zip(record | final)
        if weights is not None:
            cols["Weight"] = weights.astype(np.float32)
        cols.update(extra or {})
        f.mktree("kin", {k: (v.type if isinstance(v, ak.Array) else v.dtype) for k, v in cols.items()},
                 field_name=lambda outer, inner: f"{inner}_{outer}", counter_name=lambda c: "NumFinalState")
        for a, b in zip(np.linspace(0, n, baskets + 1).astype(int)[:-1],
                        np.linspace(0, n, baskets + 1).astype(int)[1:]):
            f["kin"].extend({k: v[a:b] for k, v in cols.items()})


# ----------------------------------------------------------------------------- laddu's names


@pytest.mark.parametrize("precision", ["f64", "f32"])
def test_written_tree_read_by_uproot_bit_for_bit(tmp_path, precision):
    p4s, scalars, w = _arrays(50, seed=1)
    ds = ld.Dataset.from_arrays(p4s=p4s, scalars=scalars, weights=w, chunk_size=20)
    path = tmp_path / "ours.root"
    ds.write_root(path, tree="events", precision=precision)
    cast = np.float64 if precision == "f64" else np.float32
    tree = uproot.open(path)["events"]
    assert tree.keys() == ds.schema.flat_columns() + ["weight"]
    assert {tree[k].typename for k in tree.keys()} == {"double" if cast is np.float64 else "float"}
    assert tree.common_entry_offsets() == [0, 20, 40, 50]          # one basket per partition
    got = tree.arrays(library="np")
    for name, values in (_flat(p4s, scalars) | {"weight": w}).items():
        assert got[name].dtype == cast
        np.testing.assert_array_equal(got[name], values.astype(cast))


def test_uproot_written_tree_reads_bit_for_bit_by_basket(tmp_path):
    rng = np.random.default_rng(2)
    n = 2000
    cols = {"k_e": rng.normal(size=n), "k_px": rng.normal(size=n).astype(np.float32),
            "k_py": rng.normal(size=n), "k_pz": rng.normal(size=n),
            "run": rng.integers(0, 9, n).astype(np.int32), "good": rng.random(n) < 0.5,
            "weight": rng.normal(size=n).astype(np.float32)}
    path = tmp_path / "uproot.root"
    with uproot.recreate(path) as f:
        f.mktree("t", {k: v.dtype for k, v in cols.items()})
        for a in range(0, n, 400):                                 # five baskets of 400 entries
            f["t"].extend({k: v[a:a + 400] for k, v in cols.items()})
    ds = ld.read_root(path, chunk_size=1000)                       # the first TTree
    assert ds.schema == ld.Schema(("k",), ("run", "good"), True)
    # cut at the basket boundary within each chunk: no basket is read by two partitions
    assert [(p.offset, p.n_events) for p in ds.partitions] == [(0, 800), (800, 800), (1600, 400)]
    assert ds.partitions[0].decoded_rows == 400 and ds.partitions[0].source == f"{path}:t [entries 0:800]"
    got, weights = _concat(ds)
    for name, values in cols.items():
        if name != "weight":
            np.testing.assert_array_equal(got[name], values.astype(np.float64))
    np.testing.assert_array_equal(weights, cols["weight"].astype(np.float64))
    only, _ = _concat(ds, ["run"])                                 # a column subset
    assert list(only) == ["run"]
    # without a boundary inside a chunk, the chunk is cut where it ends
    assert [p.n_events for p in ds.with_chunk_size(300).partitions] == [300] * 6 + [200]
    f32 = ds.load_partition(1, ["k_px"], np.float32).columns["k_px"]
    np.testing.assert_array_equal(f32, cols["k_px"][800:1600])


def test_folder_glob_and_fsspec_url(tmp_path):
    import fsspec

    p4s, scalars, w = _arrays(30, seed=3)
    ds = ld.Dataset.from_arrays(p4s=p4s, scalars=scalars, weights=w)
    (tmp_path / "runs").mkdir()
    for i in range(3):
        ds.write_root(tmp_path / "runs" / f"run{i}.root", tree="kin")
    (tmp_path / "runs" / "notes.txt").write_text("not ROOT")
    folder = ld.read_root(tmp_path / "runs", chunk_size=25)
    assert [os.path.basename(s) for s in folder.sources] == ["run0.root", "run1.root", "run2.root"]
    assert [p.n_events for p in folder.partitions] == [25, 5] * 3   # never across two files
    assert folder.sum_weights() == ld.read_root(tmp_path / "runs" / "run*.root").sum_weights()
    fs = fsspec.filesystem("memory")
    with fs.open("/root-test/run0.root", "wb") as out:
        out.write((tmp_path / "runs" / "run0.root").read_bytes())
    remote = ld.read_root("memory://root-test/run0.root", chunk_size=25)
    np.testing.assert_array_equal(_concat(remote)[1], _concat(folder)[1][:30])
    with pytest.raises(FileNotFoundError, match=r"holds no \*\.root files"):
        ld.read_root(tmp_path)


# ----------------------------------------------------------------------------- laddu


@pytest.mark.parametrize("precision", ["f64", "f32"])
def test_laddu_reads_our_root_file(tmp_path, precision):
    laddu = pytest.importorskip("laddu")
    p4s, scalars, w = _arrays(40, seed=4)
    path = tmp_path / "ours.root"
    ld.Dataset.from_arrays(p4s=p4s, scalars=scalars, weights=w, chunk_size=15).write_root(
        path, tree="events", precision=precision)
    cast = np.float64 if precision == "f64" else np.float32
    theirs = laddu.read_root(str(path), tree="events")
    # laddu orders the four-vectors by name (its schema inference sorts them)
    assert theirs.p4_names() == sorted(NAMES) and theirs.scalar_names() == ["pol"] and len(theirs) == 40
    batches = list(theirs.batches())
    for name, values in p4s.items():
        got = np.concatenate([b.p4s[name] for b in batches])
        np.testing.assert_array_equal(got, values.astype(cast).astype(np.float64))
    np.testing.assert_array_equal(np.concatenate([b.scalars["pol"] for b in batches]),
                                  scalars["pol"].astype(cast))
    np.testing.assert_array_equal(np.concatenate([b.weights for b in batches]), w.astype(cast))
    # and ours of the same file, bit for bit with laddu's
    ours, weights = _concat(ld.read_root(path))
    np.testing.assert_array_equal(weights, np.concatenate([b.weights for b in batches]))
    for name in NAMES:
        got = np.concatenate([b.p4s[name] for b in batches])
        for j, c in enumerate(P4_COMPONENTS):
            np.testing.assert_array_equal(ours[f"{name}_{c}"], got[:, j])


@pytest.mark.parametrize("precision", ["f64", "f32"])
def test_we_read_laddu_root_sink(tmp_path, precision):
    laddu = pytest.importorskip("laddu")
    p4s, scalars, w = _arrays(45, seed=5)
    path = tmp_path / "laddu.root"
    laddu.Dataset.from_arrays(p4s=p4s, scalars=scalars, weights=w).write_to(
        laddu.RootSink(str(path), tree="sample", precision=precision))
    ds = ld.read_root(path, tree="sample", chunk_size=10)
    assert ds.schema == ld.Schema(tuple(NAMES), ("pol",), True)
    cast = np.float64 if precision == "f64" else np.float32
    cols, weights = _concat(ds)
    for name, values in _flat(p4s, scalars).items():
        np.testing.assert_array_equal(cols[name], values.astype(cast))
    np.testing.assert_array_equal(weights, w.astype(cast))


def test_laddu_reads_an_amptools_tree_as_we_do_without_names(tmp_path):
    """laddu 0.28.1 has no AmpTools reader: its read_root gives the flat float branches as
    scalars, and so does ours without ``amptools`` (ours keeps the integer NumFinalState too)."""
    laddu = pytest.importorskip("laddu")
    p4s, _, w = _arrays(20, seed=6)
    path = tmp_path / "kin.root"
    _amptools_tree(path, p4s, weights=w)
    theirs = laddu.read_root(str(path))
    ours = ld.read_root(path)
    assert theirs.p4_names() == [] and list(ours.schema.p4s) == []
    assert theirs.scalar_names() == [c for c in ours.schema.scalars if c != "NumFinalState"]
    cols, _ = _concat(ours)
    batch = next(iter(theirs.batches()))
    for name in theirs.scalar_names():
        np.testing.assert_array_equal(cols[name], batch.scalars[name])
    assert ours.schema.non_numeric[0][:2] == ("E_FinalState", "float[]")


# ----------------------------------------------------------------------------- AmpTools


def test_amptools_written_by_uproot_reads_bit_for_bit(tmp_path):
    p4s, _, w = _arrays(300, seed=7)
    path = tmp_path / "kin.root"
    _amptools_tree(path, p4s, weights=w, extra={"pol_angle": np.linspace(0, 1, 300)}, baskets=3)
    ds = ld.read_root(path, tree="kin", amptools=NAMES, chunk_size=120)
    assert ds.schema == ld.Schema(tuple(NAMES), ("pol_angle",), True)
    assert [p.n_events for p in ds.partitions] == [100, 100, 100]   # its three baskets
    cols, weights = _concat(ds)
    for name, values in p4s.items():
        for j, c in enumerate(P4_COMPONENTS):
            np.testing.assert_array_equal(cols[f"{name}_{c}"], values[:, j].astype(np.float32))
    np.testing.assert_array_equal(cols["pol_angle"], np.linspace(0, 1, 300))
    np.testing.assert_array_equal(weights, w.astype(np.float32))
    # only the branches a column needs are read, and a final-state array once for all of it
    part = ds.load_partition(2, ["kshort2_pz", "beam_e"])
    np.testing.assert_array_equal(part.columns["kshort2_pz"], p4s["kshort2"][200:, 3].astype(np.float32))
    unweighted = tmp_path / "nw.root"
    _amptools_tree(unweighted, p4s)
    assert not ld.read_root(unweighted, amptools=NAMES).schema.has_weight


def test_amptools_written_by_us_read_by_uproot(tmp_path):
    p4s, scalars, w = _arrays(60, seed=8)
    ds = ld.Dataset.from_arrays(p4s=p4s, scalars=scalars, weights=w, chunk_size=25)
    path = tmp_path / "kin.root"
    ds.write_root(path, tree="kin", amptools=NAMES)                # AmpTools' Float_t by default
    tree = uproot.open(path)["kin"]
    types = {k: tree[k].typename for k in tree.keys()}
    assert types == {"E_Beam": "float", "Px_Beam": "float", "Py_Beam": "float", "Pz_Beam": "float",
                     "NumFinalState": "int32_t", "E_FinalState": "float[]", "Px_FinalState": "float[]",
                     "Py_FinalState": "float[]", "Pz_FinalState": "float[]", "pol": "float",
                     "Weight": "float"}
    assert str(tree["E_FinalState"].interpretation) == "AsJagged(AsDtype('>f4'))"
    assert tree["E_FinalState"].count_branch.name == "NumFinalState"
    got = tree.arrays(library="ak")
    assert np.all(got["NumFinalState"] == 3)
    for j, c in enumerate(AMPTOOLS):
        np.testing.assert_array_equal(got[f"{c}_Beam"].to_numpy(), p4s["beam"][:, j].astype(np.float32))
        final = ak.to_numpy(got[f"{c}_FinalState"])                # (60, 3)
        for i, name in enumerate(NAMES[1:]):
            np.testing.assert_array_equal(final[:, i], p4s[name][:, j].astype(np.float32))
    np.testing.assert_array_equal(got["Weight"].to_numpy(), w.astype(np.float32))
    back = ld.read_root(path, amptools=NAMES, chunk_size=25)
    assert [p.n_events for p in back.partitions] == [25, 25, 10]
    cols, weights = _concat(back)
    for name, values in _flat(p4s, scalars).items():
        np.testing.assert_array_equal(cols[name], values.astype(np.float32))
    # in double precision, every bit of the dataset comes back
    ds.write_root(path, tree="kin", amptools=NAMES, precision="f64")
    cols, weights = _concat(ld.read_root(path, amptools=NAMES))
    for name, values in _flat(p4s, scalars).items():
        np.testing.assert_array_equal(cols[name], values)
    np.testing.assert_array_equal(weights, w)


# ----------------------------------------------------------------------------- likelihoods


@pytest.fixture(scope="module")
def ksks_small(tmp_path_factory):
    out = tmp_path_factory.mktemp("root-ksks")
    paths = ksks.write_sample(out, n_data=1500, n_mc=3000, seed=12)
    for key in ("data", "accmc"):
        pq = ld.read_parquet(paths[key], chunk_size=700)
        pq.write_root(out / f"{key}.root", tree="events")
        pq.write_root(out / f"{key}_kin.root", tree="kin", amptools=NAMES, precision="f64")
    return out, paths


def _value_and_gradient(data, mc):
    lik = ld.Likelihood([ld.NLL(ksks.model(), data=data, accepted_mc=mc)])
    return lik.value_and_gradient(np.array([ksks.TRUTH[n] for n in lik.parameter_names]) * 1.01)


def test_nll_on_root_equals_parquet_bit_for_bit(ksks_small):
    out, paths = ksks_small
    ref = _value_and_gradient(ld.read_parquet(paths["data"]), ld.read_parquet(paths["accmc"]))
    for policy in ("resident", "streaming"):
        for suffix, names in (("", None), ("_kin", NAMES)):
            tree = "kin" if names else "events"
            data = ld.read_root(out / f"data{suffix}.root", tree=tree, amptools=names,
                                chunk_size=400, memory_policy=policy)
            mc = ld.read_root(out / f"accmc{suffix}.root", tree=tree, amptools=names,
                              chunk_size=1000, memory_policy=policy)
            value, gradient = _value_and_gradient(data, mc)
            assert value == ref[0], (policy, suffix)
            assert np.array_equal(gradient, ref[1]), (policy, suffix)


def test_selection_of_a_root_dataset_streams_like_parquet(ksks_small):
    out, paths = ksks_small
    mass = (ld.Vec4.event("kshort1") + ld.Vec4.event("kshort2")).m().real()
    root = ld.read_root(out / "data_kin.root", amptools=NAMES, chunk_size=400, memory_policy="streaming")
    parquet = ld.read_parquet(paths["data"], chunk_size=400)
    picked, reference = root.select(mass < 1.5), parquet.select(mass < 1.5)
    assert 0 < picked.n_events == reference.n_events < root.n_events
    np.testing.assert_array_equal(picked.weights(), reference.weights())


@pytest.mark.slow
def test_nll_on_root_on_a_local_cluster_equals_local(ksks_small):
    from cluster_helpers import local_cluster

    out, _ = ksks_small

    def terms():
        return (ld.read_root(out / "data.root", chunk_size=400, memory_policy="streaming"),
                ld.read_root(out / "accmc_kin.root", amptools=NAMES, chunk_size=1000))
    local = _value_and_gradient(*terms())
    for client in local_cluster():
        data, mc = terms()
        lik = ld.Likelihood([ld.NLL(ksks.model(), data=data, accepted_mc=mc)],
                            execution=ld.Execution(client=client))
        value, gradient = lik.value_and_gradient(
            np.array([ksks.TRUTH[n] for n in lik.parameter_names]) * 1.01)
    assert value == local[0] and np.array_equal(gradient, local[1])


# ----------------------------------------------------------------------------- bad input


def test_missing_tree_and_objects_that_are_not_trees(tmp_path):
    path = tmp_path / "h.root"
    with uproot.recreate(path) as f:
        f["hist"] = np.histogram([1.0, 2.0])
    with pytest.raises(DataError, match=r"h\.root holds no TTree .*hist"):
        ld.read_root(path)
    with pytest.raises(DataError, match=r"h\.root:hist is a TH1D, not a TTree"):
        ld.read_root(path, tree="hist")
    ld.Dataset.from_arrays(scalars={"x": np.ones(3)}).write_root(tmp_path / "t.root", tree="events")
    with pytest.raises(DataError, match=r"t\.root has no tree 'kin' \(its trees: \['events'\]\)"):
        ld.read_root(tmp_path / "t.root", tree="kin")
    with uproot.recreate(tmp_path / "rntuple.root") as f:
        f["events"] = {"x": np.ones(3)}                            # uproot 5.7 writes an RNTuple
    if "RNTuple" in uproot.open(tmp_path / "rntuple.root").classnames()["events;1"]:
        with pytest.raises(DataError, match=r"rntuple\.root:events is a ROOT::RNTuple, not a TTree "
                                            r".*f\.mktree"):
            ld.read_root(tmp_path / "rntuple.root", tree="events")
    (tmp_path / "fake.root").write_bytes(b"PAR1 not a ROOT file at all")
    with pytest.raises(DataError, match=r"fake\.root is not a readable ROOT file"):
        ld.read_root(tmp_path / "fake.root")


def test_missing_and_non_numeric_branches(tmp_path):
    p4s, _, _ = _arrays(10, seed=9)
    path = tmp_path / "bad.root"
    with uproot.recreate(path) as f:
        cols = {"E_Beam": p4s["beam"][:, 0], "Px_Beam": p4s["beam"][:, 1], "Py_Beam": p4s["beam"][:, 2],
                "NumFinalState": np.full(10, 1, np.int32), "arr": np.ones((10, 3))}
        f.mktree("kin", {k: (v.dtype, v.shape[1:]) if v.ndim > 1 else v.dtype for k, v in cols.items()})
        f["kin"].extend(cols)
    with pytest.raises(SchemaError, match=r"bad\.root:kin lacks branch 'Pz_Beam' of the AmpTools "
                                          r"convention \(needed for column 'beam_pz'"):
        ld.read_root(path, amptools=["beam", "proton"])
    # laddu's names: a non-numeric branch is an error once a model (or a load) needs it
    ds = ld.read_root(path)
    assert "arr" not in ds.schema.scalars
    with pytest.raises(SchemaError, match=r"needs column 'arr', which in .*bad\.root:kin has type "
                                          r"double\[3\]"):
        ds.load_partition(0, ["arr"])
    with pytest.raises(SchemaError, match=r"needs column 'arr'"):
        ld.Likelihood([ld.NLL(ld.Model(ld.scalar("arr")), data=ds, accepted_mc=ds)])
    # a non-numeric four-vector component is an error at once
    with uproot.recreate(tmp_path / "k.root") as f:
        f.mktree("t", {"k_e": ("f8", (2,)), "k_px": "f8", "k_py": "f8", "k_pz": "f8"})
        f["t"].extend({"k_e": np.ones((2, 2)), "k_px": np.ones(2), "k_py": np.ones(2), "k_pz": np.ones(2)})
    with pytest.raises(SchemaError, match=r"column 'k_e' in .*k\.root:t has type double\[2\]; "
                                          r"expected a number"):
        ld.read_root(tmp_path / "k.root")
    # an AmpTools branch of the wrong shape
    with uproot.recreate(tmp_path / "flat.root") as f:
        f.mktree("kin", {b: "f4" for b in [*(f"{c}_Beam" for c in AMPTOOLS),
                                           *(f"{c}_FinalState" for c in AMPTOOLS)]} | {"NumFinalState": "i4"})
    with pytest.raises(SchemaError, match=r"branch 'E_FinalState' of .*flat\.root:kin has type float; "
                                          r"expected a variable-length array"):
        ld.read_root(tmp_path / "flat.root", amptools=["beam", "proton"])


def test_final_states_of_the_wrong_length(tmp_path):
    p4s, _, _ = _arrays(30, seed=10)
    path = tmp_path / "kin.root"
    _amptools_tree(path, p4s)
    with pytest.raises(DataError, match=r"entry 0 of .*kin\.root:kin has NumFinalState = 3, but amptools="
                                        r"\['beam', 'proton', 'kshort1'\] names 2 final-state particles "
                                        r"\(30 entries differ\)"):
        ld.read_root(path, amptools=NAMES[:3])
    # a final-state array whose length differs from NumFinalState in one entry (its own counter)
    bad = [3] * 30
    bad[17] = 2
    pz = ak.unflatten(np.ones(sum(bad), np.float32), bad)
    block = {k: v for k, v in p4s.items()}
    path2 = tmp_path / "kin2.root"
    with uproot.recreate(path2) as f:
        cols = {f"{c}_Beam": block["beam"][:, j].astype(np.float32) for j, c in enumerate(AMPTOOLS)}
        stacked = np.stack([block[m] for m in NAMES[1:]], axis=1).astype(np.float32)
        cols["FinalState"] = ak.zip({c: ak.unflatten(stacked[:, :, j].reshape(-1), np.full(30, 3))
                                     for j, c in enumerate(AMPTOOLS[:3])})
        cols["Pz_FinalState"] = pz
        f.mktree("kin", {k: v.type if isinstance(v, ak.Array) else v.dtype for k, v in cols.items()},
                 field_name=lambda o, i: f"{i}_{o}",
                 counter_name=lambda c: "NumFinalState" if c == "FinalState" else f"n{c}")
        f["kin"].extend(cols)
    ds = ld.read_root(path2, amptools=NAMES, chunk_size=10)
    np.testing.assert_array_equal(ds.load_partition(1, ["proton_e"]).columns["proton_e"],
                                  p4s["proton"][10:20, 0].astype(np.float32))
    with pytest.raises(DataError, match=r"entry 17 \(event 17\) of .*kin2\.root:kin has 2 values in "
                                        r"branch 'Pz_FinalState', expected 3 final-state particles "
                                        r"\(.*\[entries 10:20\]\)"):
        ds.load_partition(1, ["kshort2_pz"])


def test_bad_names_non_finite_values_and_different_files(tmp_path):
    with pytest.raises(SchemaError, match=r"amptools names 'k' twice"):
        ld.read_root(tmp_path / "x.root", amptools=["beam", "k", "k"])
    with pytest.raises(SchemaError, match=r"amptools must be a list of particle names"):
        ld.read_root(tmp_path / "x.root", amptools="beam")
    x = np.arange(12.0)
    x[7] = np.inf
    with uproot.recreate(tmp_path / "inf.root") as f:
        f.mktree("t", {"x": "f8"})
        f["t"].extend({"x": x})
    with pytest.raises(DataError, match=r"column 'x' has a non-finite value \(inf\) at event 7 "
                                        r"\(.*inf\.root:t \[entries 5:10\]\)"):
        ld.read_root(tmp_path / "inf.root", chunk_size=5).load_partition(1)
    ld.Dataset.from_arrays(scalars={"y": np.ones(2)}).write_root(tmp_path / "y.root", tree="t")
    with pytest.raises(SchemaError, match=r"inf\.root:t and .*y\.root:t have different columns"):
        ld.read_root([tmp_path / "inf.root", tmp_path / "y.root"])


def test_a_rewritten_file_is_detected(tmp_path):
    path = tmp_path / "a.root"
    ld.Dataset.from_arrays(scalars={"x": np.arange(10.0)}).write_root(path)
    ds = ld.read_root(path, memory_policy="streaming")
    assert ds.load_partition(0).columns["x"][3] == 3.0
    ld.Dataset.from_arrays(scalars={"x": np.arange(10.0) * 2}).write_root(path)
    with pytest.raises(DataChangedError, match=r"a\.root changed on disk since it was opened .*ROOT file "
                                               r"header .*Open it again with read_root"):
        ds.load_partition(0)
    os.unlink(path)
    with pytest.raises(DataChangedError, match=r"a\.root was deleted or moved"):
        ds.load_partition(0)


def test_writer_errors_leave_the_old_file(tmp_path):
    p4s, scalars, w = _arrays(20, seed=11)
    ds = ld.Dataset.from_arrays(p4s=p4s, scalars=scalars, weights=w)
    path = tmp_path / "out.root"
    path.write_bytes(b"old")
    with pytest.raises(SchemaError, match=r"amptools does not name the dataset's four-vector\(s\) "
                                          r"\['kshort2'\]"):
        ds.write_root(path, amptools=NAMES[:3])
    with pytest.raises(SchemaError, match=r"amptools names \['pion'\], which are not four-vectors"):
        ds.write_root(path, amptools=[*NAMES, "pion"])
    with pytest.raises(ValueError, match="precision must be one of"):
        ds.write_root(path, precision="f16")
    big = ld.Dataset.from_arrays(scalars={"x": np.array([1.0, 1e300])})
    with pytest.raises(DataError, match=r"column 'x' has a value \(1e\+300\) that overflows "
                                        r"float32 at event 1"):
        big.write_root(path, precision="f32")
    clash = ld.Dataset.from_arrays(p4s={"b": np.ones((2, 4)), "p": np.ones((2, 4))},
                                   scalars={"NumFinalState": np.ones(2)})
    with pytest.raises(SchemaError, match=r"scalar\(s\) \['NumFinalState'\] would clash"):
        clash.write_root(path, amptools=["b", "p"])
    assert path.read_bytes() == b"old"
    assert os.listdir(tmp_path) == ["out.root"]                    # no temporary left behind
    empty = ld.Dataset.from_arrays(scalars={"x": np.zeros(0)})
    empty.write_root(path)
    back = ld.read_root(path)
    assert back.n_events == 0 and back.load_partition(0).columns["x"].shape == (0,)
