"""The public API against its checked-in snapshot (``tests/public_api.txt``): a name added,
removed or renamed, or a signature changed, fails here until the snapshot is written again
on purpose (``python3 tests/public_api.py --write``) and the change is in the diff."""

import difflib

from public_api import SNAPSHOT, _entry, render


def test_the_public_api_is_its_snapshot():
    current, saved = render(), SNAPSHOT.read_text()
    diff = "\n".join(difflib.unified_diff(saved.splitlines(), current.splitlines(), "tests/public_api.txt",
                                          "laddu_dask now", lineterm=""))
    assert current == saved, (
        "the public API differs from tests/public_api.txt; if the change is meant, run "
        f"`python3 tests/public_api.py --write` and commit the file:\n{diff}")


def test_the_snapshot_sees_a_changed_signature():
    def fit(likelihood, *, restarts: int = 1):
        """A stand-in."""

    def renamed(likelihood, *, restart: int = 1):
        """The same with a keyword renamed."""

    assert _entry("fit", fit, 0) != _entry("fit", renamed, 0)
    assert _entry("fit", fit, 0) == ["fit: function(likelihood, *, restarts: int = 1)"]


def test_the_benchmarks_are_not_part_of_the_library():
    """The benchmarks and their competitors' code live in benchmarks/laddu_dask_bench, outside
    the installed package: ``import laddu_dask.bench`` fails, and no module of the library
    imports the benchmarks' package."""
    import ast
    import importlib.util
    from pathlib import Path

    import pytest

    with pytest.raises(ModuleNotFoundError, match="laddu_dask.bench"):
        importlib.import_module("laddu_dask.bench")
    assert importlib.util.find_spec("laddu_dask_bench") is not None  # tests/conftest.py puts it on the path
    package = Path(__file__).resolve().parents[2] / "laddu_dask"
    importing = []
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            if any(n.split(".")[0] == "laddu_dask_bench" for n in names):
                importing.append(str(path.relative_to(package.parent)))
    assert not importing, f"library modules import the benchmarks: {importing}"
