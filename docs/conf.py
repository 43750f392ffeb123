"""Sphinx configuration of laddu-dask's documentation site.

Build it from the repository root (``pip install -e ".[docs]"`` first; the ``test`` extra
includes it)::

    python3 -m sphinx -W --keep-going -b html docs /tmp/laddu-dask-docs

``.ci/run`` builds it so, warnings as errors.  The pages are Markdown (MyST); the API
reference is generated from the docstrings of the public ``laddu_dask`` namespace by the
``laddu_api`` extension in ``docs/_ext``.
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # this checkout's laddu_dask, whatever is installed
sys.path.insert(0, os.path.join(HERE, "_ext"))

import laddu_dask  # noqa: E402

project = "laddu-dask"
author = "the laddu-dask developers"
copyright = "the laddu-dask developers"  # noqa: A001 - Sphinx's name
release = version = laddu_dask.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
    "myst_parser",
    "laddu_api",
]

source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
root_doc = "index"
# the scripts and images beside the pages (docs/*.py, *.png) are not pages; mutation.md is the
# mutation-testing record that CONTRIBUTING.md points to, kept as a plain file
exclude_patterns = ["_build", "mutation.md", "**/__pycache__"]

myst_enable_extensions = ["colon_fence", "dollarmath"]
myst_heading_anchors = 3

autodoc_member_order = "bysource"
autodoc_typehints = "none"  # the signatures show them; numpydoc sections describe the rest
autosummary_generate = False  # no generated stub files: the API pages list their objects themselves
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
# every public object and method has a docstring (GL08) with a summary (SS01); the methods below
# implement a documented protocol (a ganesh terminator's check, a transform's derivative, a
# penalty's value and gradient) and say nothing of their own
numpydoc_validation_checks = {"GL08", "SS01"}
numpydoc_validation_exclude = {
    r"\.ganesh\.\w+\.check$",
    r"\.ganesh\.\w+\.derivative$",
    r"Penalty\.value_and_gradient$",
}

html_theme = "furo"
html_title = f"laddu-dask {release}"
html_static_path: list[str] = []
