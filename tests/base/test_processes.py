"""Child interpreters: isolated from the working folder and PYTHONPATH, ended with their parent.

The kernel compilation in a child process (:mod:`laddu_dask.compile.precompile`) is the
library's child interpreter; these tests run it on a stand-in kernel module (its source is
what the child executes, as it executes a generated kernel's).
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import psutil
import pytest

import laddu_dask
from laddu_dask.compile.precompile import compile_in_child
from laddu_dask.processes import python_command

pytest.importorskip("numba")

#: a kernel module whose blocked sum "compiles" at once
KERNEL = """\
class _Kernel:
    def compile(self, signature):
        return None


value_sum = _Kernel()
"""

HOSTILE = 'open({marker!r}, "w").write(__file__)\n'


def _fused(source: str) -> types.SimpleNamespace:
    """What :func:`compile_in_child` reads of a ``FusedKernels``."""
    return types.SimpleNamespace(module_source=source, precision="f64", cache_kinds=())


def _plant(folder: Path, names: tuple[str, ...]) -> Path:
    """Modules ``names`` in ``folder`` that leave a marker file in ``folder/markers`` when imported."""
    markers = folder / "markers"
    markers.mkdir(parents=True)
    for name in names:
        (folder / f"{name}.py").write_text(HOSTILE.format(marker=str(markers / name)))
    return markers


@pytest.mark.parametrize("modules", [("json",), ("json", "numpy", "numba", "runpy", "laddu_dask")],
                         ids=["json", "several"])
def test_the_compile_child_imports_neither_the_working_folder_nor_pythonpath(modules, tmp_path,
                                                                            monkeypatch):
    """A ``json.py`` in the working folder ran in every compile child (``python -m`` puts the
    working folder first on sys.path); now neither it nor a module on PYTHONPATH runs, and
    the child imports the parent's laddu_dask."""
    cwd, elsewhere = tmp_path / "cwd", tmp_path / "pythonpath"
    planted = [_plant(cwd, modules), _plant(elsewhere, modules)]
    monkeypatch.chdir(cwd)
    monkeypatch.setenv("PYTHONPATH", str(elsewhere))
    imported = tmp_path / "imported.txt"
    source = KERNEL + f"import laddu_dask\nopen({str(imported)!r}, 'w').write(laddu_dask.__file__)\n"
    compiled = compile_in_child(_fused(source), False, timeout=120)
    assert [sorted(p.name for p in markers.iterdir()) for markers in planted] == [[], []]
    assert compiled
    assert imported.read_text() == laddu_dask.__file__


def test_python_command_runs_a_module_of_this_package_only():
    with pytest.raises(ValueError, match="'json' is not a module of laddu_dask"):
        python_command("json")


PARENT = """\
import sys, types
from laddu_dask.compile.precompile import compile_in_child
source = sys.argv[1]
compile_in_child(types.SimpleNamespace(module_source=source, precision="f64", cache_kinds=()),
                 False, timeout=300)
"""

# the child's "compilation": say its process id through a FIFO, then never end
STUCK = """\
import os, threading
with open({fifo!r}, "w") as f:
    f.write(str(os.getpid()))
threading.Event().wait(300)
"""


@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
def test_the_compile_child_ends_when_its_parent_is_killed(how, tmp_path):
    """SIGTERM (or SIGKILL) of a process whose first compilation runs in a child used to
    leave the child compiling as an orphan; it now ends within a second of its parent."""
    fifo = tmp_path / "compiling"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # the child's open() waits for a reader
    env = {**os.environ, "PYTHONPATH": os.path.dirname(os.path.dirname(laddu_dask.__file__))}
    source = textwrap.dedent(STUCK).format(fifo=str(fifo))
    parent = subprocess.Popen([sys.executable, "-c", PARENT, source], env=env, cwd=tmp_path,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    child = None
    try:
        ready, _, _ = select.select([reader], [], [], 120)
        assert ready, "the compile child did not start within 120 s"
        child = psutil.Process(int(os.read(reader, 64)))
        assert child.ppid() == parent.pid
        parent.send_signal(how)
        assert parent.wait(timeout=30) == -how
        child.wait(timeout=10)  # psutil.TimeoutExpired: the orphan runs on
    finally:
        os.close(reader)
        if parent.poll() is None:
            parent.kill()
            parent.wait()
        if child is not None:
            with contextlib.suppress(psutil.NoSuchProcess):
                child.kill()
