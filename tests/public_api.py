"""The public API of laddu_dask as text, one line per name (the way laddu's PUBLIC_API.md
lists its own): every name of ``laddu_dask.__all__`` with its kind and signature, the
public methods and properties of each class, and the names of each public submodule.
``tests/docs/test_public_api.py`` compares it with the checked-in ``tests/public_api.txt``;
after an intended change of the API, write the file again with

    python3 tests/public_api.py --write
"""

from __future__ import annotations

import enum
import inspect
import re
import sys
import types
from pathlib import Path

SNAPSHOT = Path(__file__).with_name("public_api.txt")
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def _signature(obj: object) -> str:
    try:
        text = str(inspect.signature(obj))
    except (TypeError, ValueError):
        return "(...)"
    return _ADDRESS.sub("", text)


def _declared(cls: type) -> dict[str, object]:
    """The members ``cls`` presents from laddu-dask's own classes: its own, those of the mixins
    it is assembled from (``Dataset``'s operations and writers), and those of the lower
    layer's class of the same name (``laddu_dask.facade``'s ``Likelihood`` adds the methods of
    the layers above to ``laddu_dask.likelihood.Likelihood``); the nearer class wins.  Members
    of other packages' bases (Dask's collection protocol) are theirs to keep."""
    members: dict[str, object] = {}
    for base in reversed(cls.__mro__):
        if base.__module__.startswith("laddu_dask."):
            members.update(vars(base))
    return members


def _members(cls: type, prefix: str) -> list[str]:
    out = []
    for name, value in sorted(_declared(cls).items()):
        if name.startswith("_"):  # the class's own line gives __init__'s signature
            continue
        if isinstance(value, property):
            out.append(f"{prefix}.{name}: property")
        elif isinstance(value, staticmethod | classmethod):
            out.append(f"{prefix}.{name}: {type(value).__name__}{_signature(value.__func__)}")
        elif inspect.isfunction(value):
            out.append(f"{prefix}.{name}: method{_signature(value)}")
    return out


def _entry(prefix: str, value: object, depth: int) -> list[str]:
    if isinstance(value, types.ModuleType):
        names = getattr(value, "__all__", None)
        lines = [f"{prefix}: module"]
        if depth == 0 and names is not None:
            for name in sorted(names):
                lines += _entry(f"{prefix}.{name}", getattr(value, name), depth + 1)
        return lines
    if inspect.isclass(value):
        if issubclass(value, enum.Enum):
            return [f"{prefix}: enum {[m.name for m in value]}"]
        kind = "exception" if issubclass(value, BaseException) else "class"
        return [f"{prefix}: {kind}{_signature(value)}", *_members(value, prefix)]
    if callable(value):
        return [f"{prefix}: function{_signature(value)}"]
    return [f"{prefix}: {type(value).__name__}"]


def render() -> str:
    """Every public name of laddu_dask, a line each, sorted."""
    import laddu_dask

    lines: list[str] = []
    for name in sorted(laddu_dask.__all__):
        lines += _entry(name, getattr(laddu_dask, name), 0)
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    if sys.argv[1:] == ["--write"]:
        SNAPSHOT.write_text(render())
        print(f"wrote {SNAPSHOT}")
    else:
        sys.stdout.write(render())
