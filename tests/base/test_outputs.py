"""What an output may replace (issue 23, item 1): one rule, ``laddu_dask.files.check_output``.

A folder output replaces only a new or empty folder or a previous laddu-dask output (its
marker lists every file in it); never a folder holding anything else, the working folder or
a folder above it, a file, a symbolic link, or an input.  A file output never replaces an
input being read.  Every refusal is an ``UnsafeOutputError`` naming the path, raised before
anything is written.
"""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

import laddu_dask as ld
from laddu_dask import ksks
from laddu_dask.errors import UnsafeOutputError
from laddu_dask.files import OUTPUT_MARKER, atomic_folder, check_output


def _generator() -> ld.Generator:
    """A parent of mass 1.8 at rest decaying isotropically to K_S K_S."""
    return ld.Generator(ld.Channel("X -> K_S K_S", edges=[
        ld.Edge("X", particle=ld.Particle(mass=1.8),
                initial_momentum=ld.InitialMomentum.momentum([0, 0, 0])),
        ld.Edge("ks1", particle=ld.particles.K_SHORT), ld.Edge("ks2", particle=ld.particles.K_SHORT)],
        vertices=[ld.Vertex("decay", incoming=["X"], outgoing=["ks1", "ks2"])]))


def _tree(folder) -> dict[str, bytes]:
    """Every file under ``folder`` (relative name -> content)."""
    out = {}
    for root, _, files in os.walk(folder):
        for name in files:
            path = os.path.join(root, name)
            with open(path, "rb") as f:
                out[os.path.relpath(path, folder)] = f.read()
    return out


@pytest.mark.parametrize("kind", ["weighted", "unweighted"])
def test_the_generator_never_deletes_a_users_files(tmp_path, kind):
    generate = getattr(_generator(), kind)
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    before = _tree(tmp_path)
    with pytest.raises(UnsafeOutputError, match=rf"refusing to replace the folder {mine}: it holds files "
                                                r"laddu-dask did not write \(notes.txt\)"):
        generate(50, seed=1, path=mine)
    assert _tree(tmp_path) == before  # nothing written, no temporary left beside it
    # a file, a symbolic link to the user's folder: refused, both kept
    (tmp_path / "file.parquet").write_text("not a folder")
    os.symlink(mine, tmp_path / "link")
    with pytest.raises(UnsafeOutputError, match=rf"refusing to replace the file {tmp_path / 'file.parquet'}"):
        generate(50, seed=1, path=tmp_path / "file.parquet")
    with pytest.raises(UnsafeOutputError, match=rf"{tmp_path / 'link'}: it is a symbolic link"):
        generate(50, seed=1, path=tmp_path / "link")
    assert (tmp_path / "file.parquet").read_text() == "not a folder"
    assert (mine / "notes.txt").read_text() == "keep me" and os.listdir(mine) == ["notes.txt"]


def test_the_working_folder_and_its_parents_are_never_replaced(tmp_path, monkeypatch):
    work = tmp_path / "work"
    work.mkdir()
    (work / "analysis.py").write_text("print('mine')")
    monkeypatch.chdir(work)
    generator = _generator()
    before = _tree(tmp_path)
    with pytest.raises(UnsafeOutputError,
                       match=rf"refusing to replace the folder {work}: it is the working folder"):
        generator.weighted(50, seed=1, path=".")
    with pytest.raises(UnsafeOutputError, match=rf"{tmp_path}: it is a parent of the working folder {work}"):
        generator.unweighted(50, seed=1, path="..")
    assert _tree(tmp_path) == before
    # even an empty working folder: its files may be written later, and the process stands in it
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.chdir(empty)
    with pytest.raises(UnsafeOutputError, match="it is the working folder"):
        generator.weighted(5, seed=1, path=empty)


def test_a_previous_output_is_replaced_but_not_once_a_user_adds_to_it(tmp_path):
    generator = _generator()
    out = tmp_path / "mc"
    out.mkdir()  # an empty folder is fine
    first, _ = generator.weighted(300, seed=1, partition_events=100, path=out)
    marker = json.loads((out / OUTPUT_MARKER).read_text())
    assert sorted(os.listdir(out)) == sorted([OUTPUT_MARKER, *marker["files"]])
    assert marker["files"] == ["part-00000.parquet", "part-00001.parquet", "part-00002.parquet"]
    again, _ = generator.weighted(200, seed=2, partition_events=100, path=out)  # ours: replaced
    assert again.n_events == 200 and len(os.listdir(out)) == 3
    (out / "part-00000.parquet").unlink()  # a user removing our files leaves it ours
    generator.weighted(100, seed=3, path=out)
    (out / "fit.json").write_text("{}")
    with pytest.raises(UnsafeOutputError, match=r"did not write \(fit.json\)"):
        generator.weighted(100, seed=4, path=out)
    (out / "fit.json").unlink()
    (out / "sub").mkdir()  # a folder the marker does not list
    with pytest.raises(UnsafeOutputError, match=r"did not write \(sub\)"):
        generator.weighted(100, seed=4, path=out)
    # a marker that is not ours (or lists what is not there) does not make a folder ours
    (out / "sub").rmdir()
    (out / OUTPUT_MARKER).write_text(json.dumps({"kind": "other", "files": ["part-00000.parquet"]}))
    with pytest.raises(UnsafeOutputError, match=rf"did not write \({OUTPUT_MARKER}, part-00000.parquet\)"):
        generator.weighted(100, seed=4, path=out)


def test_a_folder_output_holding_an_input_is_refused(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    ld.Dataset.from_arrays(scalars={"x": np.arange(3.0)}).write_parquet(data / "a.parquet")
    source = ld.read_parquet(data)
    for target in (data, tmp_path):
        with pytest.raises(UnsafeOutputError,
                           match=rf"{target}: it is or holds the input {data / 'a.parquet'}"):
            check_output(target, folder=True, inputs=source.sources)
    with pytest.raises(UnsafeOutputError, match="it is or holds the input"):
        with atomic_folder(data, inputs=source.sources):
            raise AssertionError("never entered")
    assert os.listdir(data) == ["a.parquet"]


@pytest.mark.parametrize("writer", ["write_parquet", "write_root"])
def test_a_dataset_is_never_written_over_its_own_input(tmp_path, writer):
    if writer == "write_root":
        pytest.importorskip("uproot")
    path = tmp_path / ("x.parquet" if writer == "write_parquet" else "x.root")
    getattr(ld.Dataset.from_arrays(scalars={"x": np.arange(3.0)}), writer)(path)
    original = path.read_bytes()
    source = ld.read_parquet(path) if writer == "write_parquet" else ld.read_root(path)
    os.symlink(path, tmp_path / "alias")
    for target in (path, tmp_path / "alias"):
        with pytest.raises(UnsafeOutputError, match=rf"refusing to write the file {target}: it is or holds "
                                                    rf"the input {path}"):
            getattr(source, writer)(target)
    assert path.read_bytes() == original and sorted(os.listdir(tmp_path)) == ["alias", path.name]
    getattr(source, writer)(tmp_path / "copy")  # any other file is fine


def test_sample_writers_check_every_target_before_writing_any(tmp_path):
    (tmp_path / "accmc").mkdir()
    (tmp_path / "accmc" / "mine.parquet").write_text("user data")
    before = _tree(tmp_path)
    with pytest.raises(UnsafeOutputError, match=rf"{tmp_path / 'accmc'}: it holds files laddu-dask did not "
                                                r"write \(mine.parquet\)"):
        ksks.write_sample(tmp_path, n_data=20, n_mc=30, seed=1, parts=2)
    with pytest.raises(UnsafeOutputError, match=r"did not write \(mine.parquet\)"):
        ksks.generate_datasets(n_data=20, n_mc=30, seed=1, path=tmp_path)
    assert _tree(tmp_path) == before  # data/ was not written either
    # the samples' own folders are ours: writing them again replaces them
    paths = ksks.write_sample(tmp_path / "s", n_data=20, n_mc=30, seed=1, parts=2)
    ksks.write_sample(tmp_path / "s", n_data=20, n_mc=30, seed=2, parts=2)
    assert ld.read_parquet(paths["data"]).n_events == 20
