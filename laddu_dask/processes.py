"""Child Python processes: started isolated, ended with their parent.

Every Python interpreter laddu-dask starts runs :func:`python_command`: ``python -I``, so
that neither the working folder, nor ``PYTHONPATH``, nor any other ``PYTHON*`` variable
decides what it imports (``python -m`` would put the working folder first on
``sys.path``, and a ``json.py`` there would run in the child), and it loads the very
``laddu_dask`` package the parent imported, from its folder, whatever other copy
``sys.path`` holds. The user's own site-packages folder (``pip install --user``) is kept
when the parent has it on its path.

A child calls :func:`exit_with_parent` with the parent's process id: it ends when the
parent ends, however the parent ended (SIGTERM, SIGKILL, a crash), instead of running on
as an orphan.

Examples
--------
>>> import subprocess
>>> from laddu_dask.processes import python_command
>>> command = python_command("laddu_dask.processes")
>>> command[1:3]
['-I', '-c']
>>> subprocess.run(command, check=True).returncode
0
"""

from __future__ import annotations

import os
import site
import sys
import threading
import time

__all__ = ["exit_with_parent", "python_command"]

#: the folder of this laddu_dask package (``.../laddu_dask``)
PACKAGE = os.path.dirname(os.path.abspath(__file__))

# run by ``python -I -c``; argv: package folder, user site folder (or ""), module, its arguments
_BOOTSTRAP = """\
import importlib.util, os, runpy, site, sys
package, user_site, module = sys.argv[1:4]
del sys.argv[1:4]
if user_site:
    site.addsitedir(user_site)
spec = importlib.util.spec_from_file_location(
    "laddu_dask", os.path.join(package, "__init__.py"), submodule_search_locations=[package])
sys.modules["laddu_dask"] = importlib.util.module_from_spec(spec)
spec.loader.exec_module(sys.modules["laddu_dask"])
runpy.run_module(module, run_name="__main__", alter_sys=True)
"""


def python_command(module: str, *args: str) -> list[str]:
    """The command line running ``module`` of this laddu_dask package as ``__main__`` (as
    ``python -m module args`` would) in an isolated interpreter.

    Parameters
    ----------
    module : str
        A module of laddu_dask, e.g. ``"laddu_dask.compile.precompile"``.
    *args : str
        Its command-line arguments (``sys.argv[1:]`` in the child).
    """
    if not module.startswith("laddu_dask."):
        raise ValueError(f"{module!r} is not a module of laddu_dask")
    user_site = site.getusersitepackages() if site.ENABLE_USER_SITE else ""
    if user_site not in sys.path:
        user_site = ""
    return [sys.executable, "-I", "-c", _BOOTSTRAP, PACKAGE, user_site, module, *args]


def exit_with_parent(parent: int, interval: float = 0.2) -> threading.Thread:
    """End this process (status 1, at once, without cleanup) within ``interval`` seconds
    of the end of process ``parent``, which started it.

    A thread watches the parent process id: when the parent ends, the child is adopted
    by another process and :func:`os.getppid` changes. Passing the id the parent had
    (rather than reading it here) also catches a parent that ended before this call.
    """
    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(interval)
        os._exit(1)

    thread = threading.Thread(target=watch, name="laddu-dask-parent-watch", daemon=True)
    thread.start()
    return thread
