"""Every code block of the README and of the documentation's pages runs as written.

The Python blocks run in order, in one namespace (the tour builds on itself), in an empty
folder: the README's tour first, then the blocks of the documentation's pages in the order of
the site's tables of contents (``docs/index.md`` and the toctrees of the pages it lists: the
user guide continues the tour). The tour's fit must be valid and recover its sample's truth
within its errors; the same blocks, pasted into one file, run as a plain script
(``python3 tour.py``), each line of the tour printed once (no worker process re-runs the script).
The batch-job block of the guide runs command by command from a folder holding a copy of
examples/. The set-up block and the site's build command are what .ci/run runs (checked against
it), and the marked test subsets name markers and a Hypothesis profile that exist.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]  # the repository (tests/<package>/test_*.py)
README = ROOT / "README.md"
DOCS = ROOT / "docs"


def code_blocks(text: str, language: str) -> list[str]:
    """The fenced blocks of ``language`` in a Markdown text, in order."""
    return re.findall(rf"^```{language}\n(.*?)^```", text, flags=re.S | re.M)


def toctree_pages(page: str = "index", seen: set[str] | None = None) -> list[str]:
    """The site's pages (``docs/``-relative, without ``.md``) in the order of its tables of
    contents, depth first from ``page``: the order a reader of the site meets them."""
    seen = set() if seen is None else seen
    seen.add(page)
    order = [page]
    folder = Path(page).parent
    text = (DOCS / f"{page}.md").read_text()
    for tree in re.findall(r"^```\{toctree\}\n(.*?)^```", text, flags=re.S | re.M):
        for entry in tree.splitlines():
            entry = entry.strip()
            if entry and not entry.startswith(":"):
                child = (folder / entry).as_posix()
                if child not in seen:
                    order += toctree_pages(child, seen)
    return order


def python_blocks() -> list[tuple[str, str]]:
    """``(where, code)`` of every Python block: the README's, then the site's pages' in order."""
    sources = [("README.md", README)] + [(f"docs/{p}.md", DOCS / f"{p}.md") for p in toctree_pages()]
    return [(f"{name} python block {i + 1}", block) for name, path in sources
            for i, block in enumerate(code_blocks(path.read_text(), "python"))]


def _toy():
    """The KsKs toy module the tour imports, wherever the library keeps it."""
    try:
        from laddu_dask.datasets import ksks
    except ImportError:  # before the datasets package
        from laddu_dask import ksks
    return ksks


def test_code_blocks_are_found():
    text = README.read_text()
    assert len(code_blocks(text, "python")) >= 1
    assert code_blocks("x\n```python\na = 1\n```\n```bash\nls\n```\n", "python") == ["a = 1\n"]
    pages = toctree_pages()
    assert pages[:2] == ["index", "getting-started"] and len(pages) == len(set(pages))
    assert {"guide/models", "guide/fits", "guide/clusters", "api/index", "api/models"} <= set(pages)
    assert {"differences", "design", "benchmarks", "testing"} <= set(pages)
    # every page with Python blocks is in the site, so its blocks run here
    for path in DOCS.rglob("*.md"):
        page = path.relative_to(DOCS).with_suffix("").as_posix()
        assert page in pages or not code_blocks(path.read_text(), "python"), page
    where = [w for w, _ in python_blocks()]
    assert where[0] == "README.md python block 1"
    assert any(w.startswith("docs/guide/many-fits.md") for w in where)


def test_readme_python_blocks_run(tmp_path, monkeypatch, capsys):
    """The blocks as notebook cells: one namespace whose ``__name__`` is ``"__main__"``."""
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "__main__"}
    for where, block in python_blocks():
        try:
            exec(compile(block, where, "exec"), namespace)  # noqa: S102
        except Exception as exc:  # pragma: no cover - the failure message is the point
            pytest.fail(f"{where} failed: {type(exc).__name__}: {exc}")
    ksks = namespace["ksks"]  # the toy module as the tour imports it

    fit = namespace["fit"]
    assert fit.valid
    for name, truth in ksks.TRUTH.items():
        pull = (fit.named_parameters[name] - truth) / fit.errors[name]
        assert abs(pull) < 4.0, f"{name}: pull {pull:.2f}"
    out = capsys.readouterr().out
    assert "truth" in out and "s_mass" in out


@pytest.mark.slow
@pytest.mark.parametrize("form", ["as-written", "worker-processes-under-main-guard"])
def test_readme_python_blocks_run_as_a_script(tmp_path, form):
    """The blocks pasted into ``tour.py`` and run with ``python3 tour.py`` from an empty folder;
    and, as the cluster section advises, with worker processes and the script's code under
    ``if __name__ == "__main__":``.

    Worker processes are spawned and re-import the main module: a tour that starts them
    unguarded is run again by each of them (its sample rewritten under the running fit: a
    ``DataChangedError``, or "Nanny failed to start"), so every line of the tour's output
    must appear exactly once.
    """
    from batch_helpers import command_env

    tour = "\n".join(block for _, block in python_blocks())
    if form != "as-written":
        assert tour.count("processes=False") == 1
        body = tour.replace("processes=False", "processes=True")
        tour = 'if __name__ == "__main__":\n' + "".join(f"    {line}\n" for line in body.splitlines())
    script = tmp_path / "tour.py"
    script.write_text(tour)
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=command_env(),
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    ksks = _toy()

    fitted = re.findall(r"^(\w+) +\S+ \+- \S+ +truth ", proc.stdout, flags=re.M)
    assert fitted == list(ksks.TRUTH), proc.stdout[-3000:]  # each parameter's line, once


def _commands(block: str) -> list[str]:
    """The commands of a shell block: its lines without comments, split at ``&&``."""
    out = []
    for line in block.splitlines():
        line = line.split("  #")[0].split(" # ")[0].strip()
        if line and not line.startswith("#"):
            out.extend(part.strip() for part in line.split("&&"))
    return out


def test_setup_and_test_commands_are_what_ci_runs():
    """The set-up block installs and tests exactly as .ci/run does, the README's command builds the
    site as .ci/run does; the marked subsets of the testing page exist."""
    import tomllib

    blocks = code_blocks(README.read_text(), "bash")
    setup = _commands(blocks[0])
    test_command = "python3 -m pytest -q -n auto --dist loadfile"  # in parallel, a file per process
    assert setup == ['pip install -e ".[test]"', "laddu-dask demo", test_command]
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert 'python3 -m pip install --quiet -e ".[test]"' in ci and ci[-1] == test_command
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    test_extra = " ".join(project["project"]["optional-dependencies"]["test"])
    assert "pytest-xdist" in test_extra and "pytest-randomly" in test_extra
    # the serial run stays the default of a bare pytest (mutmut runs it with these addopts)
    assert "-n" not in project["tool"]["pytest"]["ini_options"]["addopts"].split()
    markers = project["tool"]["pytest"]["ini_options"]["markers"]
    declared = {m.split(":")[0] for m in markers}
    build = next(_commands(b) for b in blocks if "sphinx" in b)
    assert build == ["python3 -m sphinx -W --keep-going -b html docs /tmp/laddu-dask-docs"]
    assert any(line.startswith(build[0].rsplit(" ", 1)[0] + " ") for line in ci), "CI builds the site so"
    assert "laddu-dask[docs]" in test_extra  # the test extra installs the docs extra
    testing = code_blocks((DOCS / "testing.md").read_text(), "bash")
    subsets = _commands(next(b for b in testing if "-m slow" in b))
    used = re.findall(r'pytest -q -m "?(?:not )?(\w+)', " ".join(subsets))
    assert set(used) == {"slow", "gpu"}
    assert set(used) <= declared
    named = re.findall(r"tests/[\w/]+(?:\.py)?", " ".join(subsets))  # the files and folders it runs
    assert named and all((ROOT / path).exists() for path in named), named
    from hypothesis import settings

    profile = re.search(r"HYPOTHESIS_PROFILE=(\w+)", " ".join(subsets)).group(1)
    settings.get_profile(profile)  # registered by tests/conftest.py


def test_readme_batch_job_block_runs(tmp_path):
    """The batch-job commands of the guide, as written, from a folder holding a copy of examples/."""
    import shutil

    from batch_helpers import command_env

    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    block = next(b for b in code_blocks((DOCS / "guide" / "batch-jobs.md").read_text(), "bash")
                 if "laddu-dask fit" in b)
    commands = _commands(block)
    assert commands and all(c.startswith("laddu-dask ") for c in commands)
    for command in commands:
        args = command.split()[1:]
        proc = subprocess.run([sys.executable, "-m", "laddu_dask.cli", *args], cwd=tmp_path,
                              env=command_env(), capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, f"{command}: {proc.stderr[-2000:]}"
    result = json.loads((tmp_path / "result.json").read_text())
    assert result["valid"] is True
    assert (tmp_path / "demo-data" / "data.parquet").is_file()
