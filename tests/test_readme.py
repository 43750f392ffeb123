"""Every Python block of the README runs as written, in order, in an empty folder.

The blocks share one namespace (the tour builds on itself); the assertions check what
the tour promises: the fit is valid and recovers the sample's truth within its errors.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"


def code_blocks(text: str, language: str) -> list[str]:
    """The fenced blocks of ``language`` in a Markdown text, in order."""
    return re.findall(rf"^```{language}\n(.*?)^```", text, flags=re.S | re.M)


def test_code_blocks_are_found():
    text = README.read_text()
    assert len(code_blocks(text, "python")) >= 2
    assert code_blocks("x\n```python\na = 1\n```\n```bash\nls\n```\n", "python") == ["a = 1\n"]


def test_readme_python_blocks_run(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "__readme__"}
    for i, block in enumerate(code_blocks(README.read_text(), "python")):
        try:
            exec(compile(block, f"README.md python block {i + 1}", "exec"), namespace)  # noqa: S102
        except Exception as exc:  # pragma: no cover - the failure message is the point
            pytest.fail(f"README python block {i + 1} failed: {type(exc).__name__}: {exc}")
    from laddu_dask import ksks

    fit = namespace["fit"]
    assert fit.valid
    for name, truth in ksks.TRUTH.items():
        pull = (fit.values[name] - truth) / fit.errors[name]
        assert abs(pull) < 4.0, f"{name}: pull {pull:.2f}"
    out = capsys.readouterr().out
    assert "truth" in out and "s_mass" in out
