"""Run a port of one of laddu's tutorials (``tests/tutorials/NAME.py``) under laddu or laddu-dask.

A port is one script whose only line naming the library is ``import laddu as ld``.
:func:`run` rewrites that line for the library asked for, executes the script in a fresh
namespace and returns the namespace, so a test can compare what the script computed under
both libraries. From the repository root::

    python3 tests/tutorial_ports.py coupled_channel laddu_dask
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

TUTORIALS = Path(__file__).resolve().parent / "tutorials"
LIBRARIES = ("laddu", "laddu_dask")
_IMPORT = re.compile(r"^import laddu as ld$", re.MULTILINE)


def names() -> list[str]:
    """The ports, by file stem."""
    return sorted(path.stem for path in TUTORIALS.glob("*.py"))


def source(name: str, library: str) -> str:
    """The text of port ``name`` with its one import line naming ``library``."""
    if library not in LIBRARIES:
        raise ValueError(f"library must be one of {LIBRARIES}, got {library!r}")
    text = (TUTORIALS / f"{name}.py").read_text()
    code = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
    imports = [line for line in code if _IMPORT.match(line)]
    if len(imports) != 1:
        raise ValueError(f"port {name} must have exactly one 'import laddu as ld' line, has {len(imports)}")
    return _IMPORT.sub(f"import {library} as ld", text)


def run(name: str, library: str) -> dict:
    """Execute port ``name`` with ``library`` as ``ld``; return its global namespace."""
    tests = str(TUTORIALS.parent)
    if tests not in sys.path:
        sys.path.insert(0, tests)
    path = TUTORIALS / f"{name}.py"
    namespace = {"__name__": f"tutorial_port_{name}", "__file__": str(path)}
    exec(compile(source(name, library), str(path), "exec"), namespace)  # noqa: S102
    return namespace


if __name__ == "__main__":
    sys.path.insert(0, str(TUTORIALS.parents[1]))  # this checkout's laddu_dask, not an installed one
    port, lib = sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "laddu_dask"
    namespace = run(port, lib)
    report = namespace.get("report")
    if callable(report):
        report()
