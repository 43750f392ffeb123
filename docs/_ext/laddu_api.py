"""The API reference's directives: the public ``laddu_dask`` names, documented from their docstrings.

A page of ``docs/api/`` lists the names of one topic under its own headings::

    ```{laddu-api}
    Dataset read_parquet read_root
    ```

and ``{laddu-api}`` writes, for each name of ``laddu_dask.__all__`` it is given, a summary table
and the object's documentation (a class with its public members, a function, a module with the
names it exports that the top-level namespace does not).  ``{laddu-api-unplaced}`` documents the
names of ``laddu_dask.__all__`` that no page lists, so a name added to the namespace is in the
reference before a page places it.  A name a page lists that the namespace no longer exports is
skipped (the public-API snapshot test is what guards the names themselves).
"""

from __future__ import annotations

import glob
import inspect
import os
import re

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.util.docutils import SphinxDirective

import laddu_dask

API_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "api")
_BLOCK = re.compile(r"^```\{laddu-api\}\n(.*?)^```", re.S | re.M)


def listed_names(folder: str = API_DIR) -> list[str]:
    """Every name the ``{laddu-api}`` blocks of the pages in ``folder`` list, in page order."""
    names: list[str] = []
    for path in sorted(glob.glob(os.path.join(folder, "*.md"))):
        with open(path, encoding="utf-8") as f:
            for block in _BLOCK.findall(f.read()):
                names.extend(block.split())
    return names


def unplaced_names(folder: str = API_DIR) -> list[str]:
    """The names of ``laddu_dask.__all__`` that no API page lists."""
    listed = set(listed_names(folder))
    return sorted(n for n in laddu_dask.__all__ if n not in listed)


def _module_members(module) -> list[str]:
    """The names a re-exported module documents: its own ``__all__`` less the top-level objects."""
    exported = (getattr(laddu_dask, n) for n in laddu_dask.__all__)
    top = {id(obj) for obj in exported if not inspect.ismodule(obj)}
    names = getattr(module, "__all__", None) or [n for n in vars(module) if not n.startswith("_")]
    return [n for n in names if hasattr(module, n) and id(getattr(module, n)) not in top]


def rst_lines(names: list[str]) -> list[str]:
    """reStructuredText that documents ``names`` of the public namespace (unknown ones skipped)."""
    public = [n for n in names if n in laddu_dask.__all__]
    if not public:
        return []
    lines = [".. autosummary::", ""]
    lines += [f"   ~laddu_dask.{n}" for n in public]
    lines.append("")
    for name in public:
        obj = getattr(laddu_dask, name)
        target = f"laddu_dask.{name}"
        if inspect.ismodule(obj):
            members = _module_members(obj)
            lines.append(f".. automodule:: {target}")
            if members:
                lines.append(f"   :members: {', '.join(members)}")
        elif inspect.isclass(obj):
            lines += [f".. autoclass:: {target}", "   :members:"]
            # a public class assembled over a layer's class (the facade) shows the layer's members
            # too, but never those of Python's own bases (object, Exception, Enum, ...)
            bases = obj.__mro__[1:]
            if any(c.__module__.startswith("laddu_dask") for c in bases):
                foreign = [c.__name__ for c in bases if not c.__module__.startswith("laddu_dask")]
                lines.append(f"   :inherited-members: {', '.join(foreign)}")
        elif callable(obj):
            lines += [f".. autofunction:: {target}"]
        else:
            lines += [f".. autodata:: {target}"]
        lines.append("")
    return lines


class _ApiDirective(SphinxDirective):
    has_content = True

    def names(self) -> list[str]:
        raise NotImplementedError

    def run(self) -> list[nodes.Node]:
        node = nodes.container()
        # a MyST page parses nested content as Markdown: the reStructuredText goes in an eval-rst block
        lines = ["````{eval-rst}", *rst_lines(self.names()), "````"]
        content = StringList(lines, source=self.get_source_info()[0])
        self.state.nested_parse(content, self.content_offset, node)
        return node.children


class LadduApi(_ApiDirective):
    """``{laddu-api}``: the names of its content, whitespace-separated."""

    def names(self) -> list[str]:
        return " ".join(self.content).split()


class LadduApiUnplaced(_ApiDirective):
    """``{laddu-api-unplaced}``: the public names that no API page lists."""

    def names(self) -> list[str]:
        return unplaced_names()

    def run(self) -> list[nodes.Node]:
        if not self.names():
            return [nodes.paragraph(text="Every public name is on one of the pages above.")]
        return super().run()


def _module_sections_as_rubrics(app, what, name, obj, options, lines) -> None:
    """A module docstring's numpydoc sections (``Examples`` over dashes) as rubrics, not sections.

    numpydoc leaves a module's docstring as it is, and its section titles would be document
    sections: every module's ``Examples`` one label, duplicated across pages.
    """
    if what != "module":
        return
    i = 0
    while i + 1 < len(lines):
        title, rule = lines[i].strip(), lines[i + 1].strip()
        if title and len(rule) >= len(title) and set(rule) <= {"-", "="}:
            lines[i:i + 2] = [f".. rubric:: {title}", ""]
        i += 1


def setup(app):
    """Register the directives and the docstring hook."""
    app.connect("autodoc-process-docstring", _module_sections_as_rubrics)
    app.add_directive("laddu-api", LadduApi)
    app.add_directive("laddu-api-unplaced", LadduApiUnplaced)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
