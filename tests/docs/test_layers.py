"""The layers of DESIGN.md, as import-linter checks them in CI (``.importlinter``), the facade of
the public classes on top of those it assembles.

The library keeps its contract, and the contract catches what it is for: an upward import,
even one inside a function, in a copy of the library with one such import added.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytest.importorskip("importlinter")


def _lint(package_parent: Path) -> subprocess.CompletedProcess:
    """``lint-imports`` with the project's contract, on the ``laddu_dask`` found in ``package_parent``."""
    code = ("import sys; sys.path.insert(0, sys.argv[1]); from importlinter.cli import lint_imports_command; "
            "lint_imports_command(['--config', sys.argv[2], '--no-cache'])")
    return subprocess.run([sys.executable, "-c", code, str(package_parent), str(ROOT / ".importlinter")],
                          capture_output=True, text=True, timeout=300, cwd=package_parent)


def test_the_library_keeps_its_layers():
    run = _lint(ROOT)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert "KEPT" in run.stdout and "BROKEN" not in run.stdout


def _lint_with_import(tmp_path: Path, module: str, statement: str) -> subprocess.CompletedProcess:
    """:func:`_lint` on a copy of the library whose ``module`` (a path below ``laddu_dask/``)
    ends with a function that runs the import ``statement``."""
    shutil.copytree(ROOT / "laddu_dask", tmp_path / "laddu_dask",
                    ignore=shutil.ignore_patterns("__pycache__"))
    path = tmp_path / "laddu_dask" / module
    path.write_text(path.read_text() + f"\n\ndef _added():\n    {statement}\n")
    return _lint(tmp_path)


def test_an_upward_import_inside_a_function_breaks_them(tmp_path):
    run = _lint_with_import(tmp_path, "data/checks.py", "from laddu_dask.likelihood import terms")
    assert run.returncode != 0
    assert "laddu_dask.data is not allowed to import laddu_dask.likelihood" in run.stdout
    assert "laddu_dask.data.checks -> laddu_dask.likelihood.terms" in run.stdout


def test_a_layer_that_reaches_the_facade_breaks_them(tmp_path):
    """The facade (the public classes) sits above every layer whose methods it assembles: a
    layer below that imports it, to build a public object itself, is an upward import."""
    run = _lint_with_import(tmp_path, "analysis/replicas.py", "from laddu_dask.facade import Likelihood")
    assert run.returncode != 0
    assert "laddu_dask.analysis is not allowed to import laddu_dask.facade" in run.stdout


def test_a_cycle_inside_a_package_breaks_them(tmp_path):
    """Two modules of one package that import each other, one of them inside a function (the
    likelihood and its terms did): the acyclic contract names the package and the edge."""
    run = _lint_with_import(tmp_path, "likelihood/term_base.py",
                            "from laddu_dask.likelihood import likelihood")
    assert run.returncode != 0
    assert "No cycles are allowed in laddu_dask.likelihood" in run.stdout
    assert ".term_base -> .likelihood" in run.stdout


def test_the_one_declared_exception_is_expr_from_json(tmp_path):
    """Only node's import of the expression reader (inside ``Expr.from_json``) is let through;
    a second import of it from node's own level is a cycle."""
    config = (ROOT / ".importlinter").read_text()
    assert config.count("ignore_imports") == 1
    assert "laddu_dask.expr.node -> laddu_dask.expr.exprjson_read" in config
    run = _lint_with_import(tmp_path, "expr/tags.py", "from laddu_dask.expr import exprjson_read")
    assert run.returncode != 0 and "No cycles are allowed in laddu_dask.expr" in run.stdout
