"""Hand-built task graphs: one task per partition, then a tree of exact merges.

This follows the chunk / combine / aggregate pattern of ``dask.array.reduction``,
but the graph is built directly as a dictionary, so an evaluation costs no
collection-level graph construction or optimisation.  Merges are exact
(:class:`~laddu_dask.sums.ExactPartials`), so the result does not
depend on the shape of the tree.

Examples
--------
>>> from laddu_dask.runtime.reduction import tree_graph
>>> graph, root = tree_graph({("leaf", i): (float, i) for i in range(5)}, 2, sum, "t")
>>> import dask
>>> dask.get(graph, root)
10.0
"""

from __future__ import annotations

import itertools
import threading
import uuid
import weakref
from collections.abc import Callable, Hashable, Mapping
from typing import Any

from laddu_dask.sums import merge as merge_list  # the combine step: exact merge of one type

_COUNTER = itertools.count()
_TOKENS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_TOKENS_LOCK = threading.Lock()


def unique_name(prefix: str) -> str:
    """A graph-key prefix unique in this process (results on a cluster never collide)."""
    return f"{prefix}-{next(_COUNTER)}"


def object_token(obj: Any) -> str:
    """A token naming ``obj`` in graph keys for as long as it lives, never given to another.

    ``id(obj)`` is no such name: once ``obj`` is collected, its id goes to the next object
    allocated there, and a key built from it names the new object's work too.  Dask keeps
    the result a client still holds under a key, so the new work would get the old result.

    Examples
    --------
    >>> class Model: ...
    >>> a = Model()
    >>> object_token(a) == object_token(a), object_token(a) == object_token(Model())
    (True, False)
    """
    with _TOKENS_LOCK:
        token = _TOKENS.get(obj)
        if token is None:
            token = _TOKENS[obj] = uuid.uuid4().hex
        return token


def tree_graph(
    leaves: Mapping[Hashable, Any],
    split_every: int,
    combine: Callable[[list[Any]], Any] = merge_list,
    name: str = "merge",
) -> tuple[dict[Hashable, Any], Hashable]:
    """Add a tree reduction over ``leaves`` and return the graph and its root key.

    Parameters
    ----------
    leaves : mapping of key to task
        One task per partition.
    split_every : int
        How many results each combine task merges (>= 2).
    combine : callable
        Takes a list of results, returns one.
    name : str
        Key prefix of the combine tasks.
    """
    graph: dict[Hashable, Any] = dict(leaves)
    level = list(leaves)
    depth = 0
    if not level:
        raise ValueError("a reduction needs at least one partition")
    if len(level) == 1:
        root = (name, depth, 0)
        graph[root] = (combine, level)
        return graph, root
    while len(level) > 1:
        nxt = []
        for j in range(0, len(level), split_every):
            key = (name, depth, j // split_every)
            graph[key] = (combine, level[j : j + split_every])
            nxt.append(key)
        level = nxt
        depth += 1
    return graph, level[0]
