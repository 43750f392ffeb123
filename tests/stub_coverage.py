"""How much of laddu 0.28.1's public Python API laddu-dask has, counted from laddu's own stubs.

Every public name of laddu's stub files (``laddu/__init__.pyi``, ``ganesh.pyi``, ``io.pyi``,
``amplitudes.pyi``, ``gpu.pyi``) is one entry: a module-level function, class or constant, and each
public method (operators such as ``__matmul__`` and ``__getitem__`` included; the constructor is
the class's entry), property, static method and constant of a class. An entry is

- ``same``: laddu-dask has the name in the corresponding place, of the same kind (a property where
  laddu has a property, a callable where laddu has a method), accepting every parameter laddu's
  signature has (by keyword where laddu's may be passed by keyword, by position where laddu's is
  positional-only);
- ``differ``: the name is there but of another kind or missing a parameter (the reason is kept);
- ``missing``: laddu-dask has no such name.

Run it as a script for the table: ``python3 tests/stub_coverage.py [-v]``.
"""

from __future__ import annotations

import ast
import inspect
import re
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: laddu's stub file and the laddu-dask object that answers for it
MODULES = {"__init__.pyi": "", "ganesh.pyi": "ganesh", "io.pyi": "io", "amplitudes.pyi": "amplitudes",
           "gpu.pyi": "gpu"}


@dataclass(frozen=True)
class Entry:
    """One public name of laddu's stubs: where it is, what it is and its parameters."""

    path: str  # "Likelihood.fit", "ganesh.MaxSteps"
    kind: str  # "function", "class", "method", "property", "staticmethod"
    positional_only: tuple[str, ...]  # laddu's positional-only parameters (self, cls excluded)
    keywords: tuple[str, ...]  # parameters laddu's signature lets a caller pass by keyword


@dataclass(frozen=True)
class Verdict:
    """How laddu-dask answers one :class:`Entry`."""

    entry: Entry
    status: str  # "same", "differ", "missing"
    reason: str = ""


def stub_dir() -> Path:
    """The installed laddu's package folder (its ``.pyi`` files)."""
    import laddu

    return Path(laddu.__file__).parent


def _name(fn: ast.FunctionDef) -> str:
    return fn.name.removesuffix("_KEYWORD")


def _parameters(fn: ast.FunctionDef) -> tuple[tuple[str, ...], tuple[str, ...]]:
    a = fn.args
    pos_only = [p.arg for p in a.posonlyargs if p.arg not in ("self", "cls")]
    keywords = [p.arg for p in a.args + a.kwonlyargs if p.arg not in ("self", "cls")]
    return tuple(pos_only), tuple(keywords)


def _decorators(fn: ast.FunctionDef) -> set[str]:
    return {d.id if isinstance(d, ast.Name) else getattr(d, "attr", "") for d in fn.decorator_list}


def entries(folder: Path | None = None) -> list[Entry]:
    """Every public name of laddu's stubs, in file order."""
    folder = stub_dir() if folder is None else folder
    out: list[Entry] = []
    for filename, prefix in MODULES.items():
        # ESSMove.global: a Python keyword as a method name (reached with getattr)
        with warnings.catch_warnings():  # the stubs' docstrings hold "\[" (a SyntaxWarning)
            warnings.simplefilter("ignore")
            tree = ast.parse(re.sub(r"\bdef (global)\(", r"def \1_KEYWORD(", (folder / filename).read_text()))
        dotted = f"{prefix}." if prefix else ""
        for node in tree.body:
            if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                out.append(Entry(dotted + node.target.id, "attribute", (), ()))
            elif isinstance(node, ast.FunctionDef) and not node.name.startswith("_"):
                out.append(Entry(dotted + node.name, "function", *_parameters(node)))
            elif isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                init = next((f for f in node.body if isinstance(f, ast.FunctionDef)
                             and f.name in ("__new__", "__init__")), None)
                params = _parameters(init) if init is not None else ((), ())
                out.append(Entry(dotted + node.name, "class", *params))
                for f in node.body:
                    if isinstance(f, ast.AnnAssign) and isinstance(f.target, ast.Name):
                        out.append(Entry(f"{dotted}{node.name}.{f.target.id}", "attribute", (), ()))
                        continue
                    if not isinstance(f, ast.FunctionDef) or f.name in ("__new__", "__init__") \
                            or f.name.startswith("_") and not f.name.endswith("__"):
                        continue
                    decorators = _decorators(f)
                    if "setter" in decorators:
                        continue
                    kind = ("property" if "property" in decorators
                            else "staticmethod" if decorators & {"staticmethod", "classmethod"} else "method")
                    out.append(Entry(f"{dotted}{node.name}.{_name(f)}", kind, *_parameters(f)))
    return out


def _resolve(root: Any, path: str) -> tuple[Any, Any, str] | None:
    """``(owner, object, last name)`` of ``path`` under ``root``, or ``None`` when absent."""
    owner, obj = None, root
    parts = path.split(".")
    for part in parts:
        owner = obj
        if isinstance(obj, type):
            try:
                obj = inspect.getattr_static(obj, part)
                continue
            except AttributeError:
                if not _instance_attribute(obj, part):
                    return None
                obj = _INSTANCE
                continue
        if not hasattr(obj, part):
            return None
        obj = getattr(obj, part)
    return owner, obj, parts[-1]


_INSTANCE = object()  # an attribute each instance sets (a dataclass field, ``self.name = ...``)


def _instance_attribute(cls: type, name: str) -> bool:
    fields = getattr(cls, "__dataclass_fields__", {})
    if name in fields or name in getattr(cls, "__slots__", ()):
        return True
    for klass in cls.__mro__[:-1]:
        try:
            source = inspect.getsource(klass)
        except (OSError, TypeError):
            continue
        if re.search(rf"self\.{re.escape(name)}\s*(:[^=\n]+)?=(?!=)", source):
            return True
    return False


def _signature(obj: Any) -> inspect.Signature | None:
    target = obj.__func__ if isinstance(obj, (staticmethod, classmethod)) else obj
    try:
        return inspect.signature(target)
    except (TypeError, ValueError):
        return None


def _missing_parameters(entry: Entry, obj: Any) -> list[str]:
    sig = _signature(obj)
    if sig is None:
        return []
    params = [p for p in sig.parameters.values() if p.name not in ("self", "cls")]
    if isinstance(obj, type):  # a class: its constructor's signature, without self
        params = [p for p in params]
    var_kw = any(p.kind is p.VAR_KEYWORD for p in params)
    var_pos = any(p.kind is p.VAR_POSITIONAL for p in params)
    by_name = {p.name: p for p in params}
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    missing = []
    for i, name in enumerate(entry.positional_only):
        if i >= len(positional) and not var_pos:
            missing.append(f"{name} (positional)")
    for name in entry.keywords:
        p = by_name.get(name)
        if p is None and not var_kw or p is not None and p.kind is p.POSITIONAL_ONLY:
            missing.append(name)
    return missing


def judge(entry: Entry, root: Any) -> Verdict:
    """How ``root`` (the ``laddu_dask`` module) answers ``entry``."""
    found = _resolve(root, entry.path)
    if found is None:
        return Verdict(entry, "missing")
    _, obj, _ = found
    if entry.kind == "attribute":
        return Verdict(entry, "same")
    if entry.kind == "property":
        if obj is _INSTANCE or isinstance(obj, property) or not callable(obj) \
                or type(obj).__name__ in ("cached_property", "getset_descriptor", "member_descriptor"):
            return Verdict(entry, "same")
        return Verdict(entry, "differ", "a method where laddu has a property")
    if obj is _INSTANCE or isinstance(obj, property):
        return Verdict(entry, "differ", f"an attribute where laddu has a {entry.kind}")
    if entry.kind == "class" and not isinstance(obj, type) and not callable(obj):
        return Verdict(entry, "differ", "not a class")
    if not callable(obj) and not isinstance(obj, (staticmethod, classmethod)):
        return Verdict(entry, "differ", f"not callable where laddu has a {entry.kind}")
    missing = _missing_parameters(entry, obj)
    if missing:
        return Verdict(entry, "differ", "does not accept " + ", ".join(missing))
    return Verdict(entry, "same")


def verdicts(root: Any = None) -> list[Verdict]:
    """:func:`judge` of every entry of laddu's stubs."""
    if root is None:
        import laddu_dask as root
    return [judge(e, root) for e in entries()]


def summary(found: list[Verdict]) -> str:
    """``"same 747 / differ 36 / missing 427 of 1210 (61.7 % same)"``."""
    n = {s: sum(v.status == s for v in found) for s in ("same", "differ", "missing")}
    return (f"same {n['same']} / differ {n['differ']} / missing {n['missing']} of {len(found)} "
            f"({100 * n['same'] / len(found):.1f} % same)")


if __name__ == "__main__":
    found = verdicts()
    if "-v" in sys.argv:
        for v in found:
            if v.status != "same":
                print(f"{v.status:8s} {v.entry.path}" + (f": {v.reason}" if v.reason else ""))
    print(summary(found))
