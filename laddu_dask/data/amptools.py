"""The AmpTools flat-tree convention, and where each of laddu's columns lives in it.

AmpTools (and the GlueX tools that feed it) store one event per entry of a ROOT tree
(usually ``kin``): the beam as the four ``Float_t`` branches ``E_Beam, Px_Beam, Py_Beam,
Pz_Beam``, the number of final-state particles as the ``Int_t`` branch ``NumFinalState``,
the final state as the variable-length arrays ``E_FinalState[NumFinalState]``,
``Px_FinalState[...]``, ``Py_FinalState[...]``, ``Pz_FinalState[...]``, and an optional
``Weight``. The particles have no names in the file: the user gives them, the beam's first
and the final state's in their order in the arrays.

Examples
--------
>>> from laddu_dask.data.amptools import amptools_leaves
>>> leaves = amptools_leaves(["beam", "proton", "kshort"])
>>> leaves["beam_px"], leaves["kshort_e"], leaves["weight"]
(('Px_Beam', -1), ('E_FinalState', 1), ('Weight', -1))
"""

from __future__ import annotations

from collections.abc import Sequence

from laddu_dask.data.schema import P4_COMPONENTS, WEIGHT_COLUMN, p4_columns
from laddu_dask.errors import SchemaError

__all__ = ["BEAM_BRANCHES", "COUNTER", "FINAL_BRANCHES", "WEIGHT", "amptools_leaves",
           "check_names"]

COMPONENTS: tuple[str, ...] = ("E", "Px", "Py", "Pz")
"""AmpTools' spelling of the components, in laddu's (E, px, py, pz) order."""

BEAM_BRANCHES: tuple[str, ...] = tuple(f"{c}_Beam" for c in COMPONENTS)
"""The beam's four branches."""

FINAL_BRANCHES: tuple[str, ...] = tuple(f"{c}_FinalState" for c in COMPONENTS)
"""The final state's four variable-length array branches."""

COUNTER = "NumFinalState"
"""The branch that counts the final-state particles of each entry."""

WEIGHT = "Weight"
"""The optional event-weight branch."""

RESERVED: frozenset[str] = frozenset((*BEAM_BRANCHES, *FINAL_BRANCHES, COUNTER, WEIGHT))
"""Branches of the convention, which no other column may be called."""


def check_names(names: Sequence[str]) -> tuple[str, ...]:
    """The particle names of an AmpTools tree: the beam's, then the final state's in order.

    Raises
    ------
    SchemaError
        Fewer than two names (a beam and one final-state particle), a name that is not a
        non-empty string, or a name given twice (naming it).

    Examples
    --------
    >>> check_names(("beam", "proton"))
    ('beam', 'proton')
    >>> check_names(["beam", "k", "k"])
    Traceback (most recent call last):
    ...
    laddu_dask.errors.SchemaError: amptools names 'k' twice; give each particle its own name ...
    """
    if isinstance(names, str) or not isinstance(names, Sequence):
        raise SchemaError(
            f"amptools must be a list of particle names, the beam's first (e.g. ['beam', "
            f"'proton', 'kshort1', 'kshort2']), got {names!r}"
        )
    names = tuple(names)
    for n in names:
        if not isinstance(n, str) or not n:
            raise SchemaError(f"amptools names must be non-empty strings, got {n!r} in {list(names)}")
    if len(names) < 2:
        raise SchemaError(
            f"amptools needs the beam's name and at least one final-state particle's, got {list(names)}"
        )
    for n in names:
        if names.count(n) > 1:
            raise SchemaError(f"amptools names {n!r} twice; give each particle its own name "
                              f"({list(names)})")
    return names


def amptools_leaves(names: Sequence[str]) -> dict[str, tuple[str, int]]:
    """Where each four-vector column (and the weight) of ``names`` lives in an AmpTools tree.

    Returns ``{column: (branch, index)}``: ``index`` is the particle's position in the
    final-state arrays, -1 for a flat branch (the beam's and the weight).
    """
    names = check_names(names)
    leaves: dict[str, tuple[str, int]] = {}
    for column, branch in zip(p4_columns(names[0]), BEAM_BRANCHES, strict=True):
        leaves[column] = (branch, -1)
    for i, name in enumerate(names[1:]):
        for column, branch in zip(p4_columns(name), FINAL_BRANCHES, strict=True):
            leaves[column] = (branch, i)
    leaves[WEIGHT_COLUMN] = (WEIGHT, -1)
    assert len(P4_COMPONENTS) == len(COMPONENTS)
    return leaves
