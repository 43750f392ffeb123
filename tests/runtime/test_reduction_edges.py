"""Tests written against the surviving mutants of ``runtime/reduction.py`` (issue 30, point 3).

The expected graphs are written out by hand (the tree of merges a user's evaluation runs);
the sums are checked against ``math.fsum``.
"""

from __future__ import annotations

import math
import re

import dask
import pytest

import laddu_dask as ld
from laddu_dask.runtime.accumulate import ExactPartials
from laddu_dask.runtime.reduction import merge_list, object_token, tree_graph, unique_name


def test_unique_name_is_the_prefix_a_dash_and_a_new_number_each_call():
    first, second = unique_name("nll"), unique_name("nll")
    a, b = re.fullmatch(r"nll-(\d+)", first), re.fullmatch(r"nll-(\d+)", second)
    assert a is not None and b is not None
    assert int(b.group(1)) == int(a.group(1)) + 1


class _Model:
    """A plain object of fixed size."""


def _recycled(make):
    """The token of an object taken while it lived, and an object allocated at its address
    after it was collected (CPython hands a freed slot to the next object of its size; a
    background thread may take it first, so the pair is tried again)."""
    for k in range(0, 2000, 2):
        first = make(k)
        address, token = id(first), object_token(first)
        del first
        second = make(k + 1)
        if id(second) == address:
            return token, second
        del second
    pytest.fail("no object was allocated at a freed address")


@pytest.mark.parametrize("make", [lambda k: _Model(),
                                  lambda k: ld.scalar(f"recycled_{k}")], ids=["object", "expr"])
def test_object_token_is_never_given_to_an_object_at_a_recycled_address(make):
    """Graph keys of results (histograms, event arrays, binned fills) name their expressions
    and models by this token: by ``id`` they named a new model with the work (and, on a
    cluster, the still-held result) of a collected one."""
    token, second = _recycled(make)
    assert object_token(second) != token
    assert object_token(second) == object_token(second)


def test_merge_list_of_one_part_and_of_several_is_the_exact_sum():
    terms = [[1e16, 1.0], [-1e16, 1e-3], [0.1, 0.2]]
    parts = [ExactPartials.from_terms(t) for t in terms]
    assert merge_list(parts[:1]).to_floats().tolist() == [math.fsum(terms[0])]
    merged = merge_list(parts)
    assert isinstance(merged, ExactPartials)
    assert merged.to_floats().tolist() == [math.fsum(sum(terms, []))]


def test_tree_graph_of_five_leaves_by_two_is_the_hand_built_tree():
    leaves = {("leaf", i): (float, i) for i in range(5)}
    graph, root = tree_graph(leaves, 2, sum, "t")
    expected = dict(leaves)
    expected.update({
        ("t", 0, 0): (sum, [("leaf", 0), ("leaf", 1)]),
        ("t", 0, 1): (sum, [("leaf", 2), ("leaf", 3)]),
        ("t", 0, 2): (sum, [("leaf", 4)]),
        ("t", 1, 0): (sum, [("t", 0, 0), ("t", 0, 1)]),
        ("t", 1, 1): (sum, [("t", 0, 2)]),
        ("t", 2, 0): (sum, [("t", 1, 0), ("t", 1, 1)]),
    })
    assert root == ("t", 2, 0)
    assert graph == expected
    assert dask.get(graph, root) == 10.0


def test_tree_graph_of_seven_leaves_by_three():
    leaves = {f"p{i}": (float, i) for i in range(7)}
    graph, root = tree_graph(leaves, 3, sum, "m")
    assert root == ("m", 1, 0)
    assert {k: v for k, v in graph.items() if k not in leaves} == {
        ("m", 0, 0): (sum, ["p0", "p1", "p2"]),
        ("m", 0, 1): (sum, ["p3", "p4", "p5"]),
        ("m", 0, 2): (sum, ["p6"]),
        ("m", 1, 0): (sum, [("m", 0, 0), ("m", 0, 1), ("m", 0, 2)]),
    }
    assert dask.get(graph, root) == 21.0


def test_tree_graph_of_one_leaf_merges_it_alone_with_the_default_combine_and_name():
    part = ExactPartials.from_terms([0.1, 0.2])
    leaves = {"only": part}
    graph, root = tree_graph(leaves, 4)
    assert root == ("merge", 0, 0)
    assert graph == {"only": part, ("merge", 0, 0): (merge_list, ["only"])}
    assert dask.get(graph, root).to_floats().tolist() == [math.fsum([0.1, 0.2])]


def test_tree_graph_default_combine_and_name_on_several_leaves():
    terms = [[0.1, 0.7], [1e16, 3.0], [-1e16]]
    leaves = {("leaf", i): ExactPartials.from_terms(t) for i, t in enumerate(terms)}
    graph, root = tree_graph(leaves, 2)
    assert root == ("merge", 1, 0)
    assert graph[("merge", 0, 0)] == (merge_list, [("leaf", 0), ("leaf", 1)])
    assert dask.get(graph, root).to_floats().tolist() == [math.fsum(sum(terms, []))]


def test_tree_graph_without_leaves_is_an_error():
    with pytest.raises(ValueError, match="^a reduction needs at least one partition$"):
        tree_graph({}, 2)
