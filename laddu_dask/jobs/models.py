"""Building the model of a term: a built-in one, or the function of a user's Python file."""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import os
import sys
import traceback
from typing import Any

from laddu_dask.jobs.schema import Checker, ModelSpec


def _import_file(path: str, where: str, check: Checker) -> Any:
    if not os.path.isfile(path):
        raise check.error(f"{where} file", f"not found: {path}")
    digest = hashlib.sha256(path.encode()).hexdigest()[:12]
    module_name = f"_laddu_dask_model_{digest}"
    if module_name in sys.modules:
        return sys.modules[module_name]
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise check.error(f"{where} file", f"cannot import {path} as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    folder = os.path.dirname(path)
    sys.path.insert(0, folder)
    try:
        spec.loader.exec_module(module)
    except KeyboardInterrupt:
        del sys.modules[module_name]
        raise
    except BaseException as exc:  # noqa: BLE001 - any failure of user code (sys.exit too) is bad input
        del sys.modules[module_name]
        raise check.error(f"{where} file", f"importing {path} failed: "
                                           f"{_describe_user_error(exc, path)}") from exc
    finally:
        with contextlib.suppress(ValueError):
            sys.path.remove(folder)
    return module


def _describe_user_error(exc: BaseException, path: str) -> str:
    """``Type: message (file line N)`` of an exception raised in a user's model file."""
    line = getattr(exc, "lineno", None) if isinstance(exc, SyntaxError) else None
    for frame in traceback.extract_tb(exc.__traceback__):
        if os.path.abspath(frame.filename) == path:
            line = frame.lineno
    at = f" ({os.path.basename(path)} line {line})" if line else ""
    if isinstance(exc, SystemExit):
        return f"it called sys.exit({exc.code!r}){at}"
    return f"{type(exc).__name__}: {exc}{at}"


def build_model(spec: ModelSpec, check: Checker) -> Any:
    from laddu_dask.expr.model import Model
    from laddu_dask.expr.node import Expr

    if spec.builtin == "ksks":
        from laddu_dask import ksks

        return ksks.model(spec.options["lineshape"],
                          fixed_lineshapes=spec.options["fixed_lineshapes"])
    assert spec.file is not None
    module = _import_file(spec.file, spec.where, check)
    function = getattr(module, spec.function, None)
    if function is None or not callable(function):
        defined = sorted(n for n, v in vars(module).items()
                         if callable(v) and not n.startswith("_")
                         and getattr(v, "__module__", None) == module.__name__)
        what = "has no function" if function is None else "has a non-callable"
        raise check.error(f"{spec.where} function", f"{spec.file} {what} {spec.function!r} "
                                                    f"(functions defined: {', '.join(defined) or 'none'})")
    try:
        built = function(**dict(spec.options))
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: BLE001 - any failure of user code (sys.exit too) is bad input
        raise check.error(spec.where, f"{spec.function}(**options) of {spec.file} failed: "
                                      f"{_describe_user_error(exc, spec.file)}") from exc
    if isinstance(built, Expr):
        built = Model(built)
    if not isinstance(built, Model):
        raise check.error(spec.where, f"{spec.function}() of {spec.file} returned "
                                      f"{type(built).__name__}; it must return a laddu_dask "
                                      "Model or expression")
    return built
