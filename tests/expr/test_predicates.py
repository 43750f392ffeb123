"""Predicates (issue 11, item 6): comparisons of expressions, ``&``, ``|``, ``~`` and
``Predicate.between``, evaluated to a boolean mask on a batch of events.

Reference: laddu 0.28.1's own selections (``Dataset.select``) of the same predicate, written
once against laddu's API, on the same random events; the events it keeps are the ones our
mask marks.
"""

from __future__ import annotations

import numpy as np
import pytest
from laddu_reference import laddu, needs_laddu

import laddu_dask as ld
from laddu_dask.compile.selection import predicate_mask
from laddu_dask.data import EventBatch
from laddu_dask.errors import ModelError, ParameterError

N = 300
RNG = np.random.default_rng(12)
_P = RNG.normal(0.0, 1.0, (N, 3))
P4S = {"s": np.column_stack([np.sqrt(np.abs(RNG.uniform(-1.0, 2.0, N) + (_P**2).sum(1))), _P])}
SCALARS = {"x": np.round(RNG.uniform(-2.0, 2.0, N), 1), "y": RNG.uniform(-1.0, 1.0, N),
           "idx": np.arange(N, dtype=float)}
COLUMNS = {**{f"s_{c}": P4S["s"][:, i] for i, c in enumerate(("e", "px", "py", "pz"))}, **SCALARS}


def between(lib, closed):
    return lib.Predicate.between(lib.scalar("x"), low=lib.Expr(-0.5), high=lib.Expr(0.5), closed=closed)


#: name -> f(lib): one predicate in laddu's spelling (x is rounded to 0.1, so ends are hit).
CASES = {
    "<": lambda lib: lib.scalar("x") < 0.3,
    "<=": lambda lib: lib.scalar("x") <= 0.3,
    ">": lambda lib: lib.scalar("x") > lib.scalar("y"),
    ">=": lambda lib: lib.scalar("x") >= 0.3,
    "==": lambda lib: lib.scalar("x") == 0.5,
    "!=": lambda lib: lib.scalar("x") != 0.5,
    "reflected": lambda lib: 0.3 < lib.scalar("x"),
    "&": lambda lib: (lib.scalar("x") > -1.0) & (lib.scalar("y") < 0.2),
    "|": lambda lib: (lib.scalar("x") < -1.0) | (lib.scalar("x") > 1.0),
    "~": lambda lib: ~(lib.scalar("x") * lib.scalar("y") < 0.1),
    "nested": lambda lib: ~((lib.scalar("x") < 0.0) | (lib.scalar("y") >= 0.5)) & (lib.scalar("y") < 0.9),
    "between both": lambda lib: between(lib, "both"),
    "between neither": lambda lib: between(lib, "neither"),
    "between left": lambda lib: between(lib, "left"),
    "between right": lambda lib: between(lib, "right"),
    "mass cut (space-like masses are imaginary)": lambda lib: lib.Vec4.event("s").m() < 1.0,
    "sqrt of negative reals": lambda lib: lib.scalar("x").sqrt() < 0.8,
    "acos": lambda lib: lib.acos(lib.scalar("y")) > 1.0,
    "kinematics": lambda lib: lib.Vec4.event("s").momentum().costheta() >= lib.scalar("y"),
}


def laddu_selected(predicate) -> np.ndarray:
    ds = laddu.Dataset.from_arrays(p4s=P4S, scalars=SCALARS)
    kept = ds.select(predicate).evaluate(laddu.scalar("idx"), real=True)
    return np.asarray(kept, dtype=int)


@needs_laddu
@pytest.mark.parametrize("name", sorted(CASES))
def test_masks_select_the_events_laddu_selects(name):
    mask = predicate_mask(CASES[name](ld), COLUMNS)
    assert mask.dtype == bool and mask.shape == (N,)
    want = laddu_selected(CASES[name](laddu))
    assert 0 < len(want) < N, "a case must keep some events and drop others"
    np.testing.assert_array_equal(np.flatnonzero(mask), want)


def test_masks_on_an_event_batch_with_parameters():
    x, a = ld.scalar("x"), ld.parameter("pr_a", initial=1.0)
    batch = EventBatch({"x": SCALARS["x"]}, np.ones(N))
    mask = predicate_mask((x * a > 0.5) & (x < 1.5), batch, parameters={"pr_a": 2.0})
    np.testing.assert_array_equal(mask, (SCALARS["x"] * 2.0 > 0.5) & (SCALARS["x"] < 1.5))
    # a constant predicate broadcasts to every event
    np.testing.assert_array_equal(predicate_mask(ld.Expr(1.0) < 2.0, batch), np.ones(N, bool))
    with pytest.raises(ParameterError, match="pr_a"):
        predicate_mask(x * a > 0.5, batch)


def test_nan_compares_false_except_not_equal():
    x = ld.scalar("x")
    cols = {"x": np.array([np.nan, 1.0])}
    assert predicate_mask(x < 2.0, cols).tolist() == [False, True]
    assert predicate_mask(~(x < 2.0), cols).tolist() == [True, False]
    assert predicate_mask(x != 1.0, cols).tolist() == [True, False]


def test_equality_keeps_identity_semantics_for_the_graph():
    x, y = ld.scalar("x"), ld.scalar("y")
    assert isinstance(x == y, ld.Predicate) and isinstance(x == 1.0, ld.Predicate)
    assert bool(x == ld.scalar("x")) and not bool(x == y) and bool(x != y)
    nodes = {x: 1, y: 2, ld.cis(x): 3}
    assert nodes[ld.scalar("y")] == 2 and nodes[ld.cis(x)] == 3
    assert ld.cis(x) in [x, ld.cis(x)] and [x, y].index(y) == 1
    assert (x == None) is False  # noqa: E711 - not an expression: Python's identity
    assert x != "x"


def test_predicate_inspection():
    p4 = ld.Vec4.event("s")
    pred = (p4.m() < 1.0) | ~ld.Predicate.between(ld.scalar("x"), low=-1.0, high=1.0)
    assert pred.columns == ["s_e", "s_px", "s_py", "s_pz", "x"]
    assert len(pred.comparisons()) == 3
    assert all(e.kind == "real" for e in pred.expressions)
    assert repr(ld.scalar("x") >= 2.0) == "Predicate((x >= 2.0))"


def test_between_converts_numbers_beside_an_expression():
    x = ld.scalar("x")
    # the numbers become constants of the expression's class, wherever the expression is
    assert repr(ld.Predicate.between(x, low=0, high=1.5)) == "Predicate(((x >= 0.0) & (x <= 1.5)))"
    assert repr(ld.Predicate.between(0.5, low=x, high=2.0, closed="neither")) == \
        "Predicate(((0.5 > x) & (0.5 < 2.0)))"
    sides = ld.Predicate.between(x.tagged("S"), low=0.0, high=1.0).expressions
    assert sides == [x, ld.constant(0.0), ld.constant(1.0)]
    with pytest.raises(ModelError, match="Predicate.between compares an expression"):
        ld.Predicate.between(0.5, low=0.0, high=1.0)


def test_predicate_errors_are_typed():
    x = ld.scalar("x")
    with pytest.raises(ModelError, match="closed must be 'both', 'neither', 'left', or 'right', got 'x'"):
        ld.Predicate.between(x, low=0.0, high=1.0, closed="x")
    with pytest.raises(ModelError, match="the comparison '<' needs real expressions"):
        ld.cis(x) < 1.0  # noqa: B015
    with pytest.raises(TypeError, match="a predicate has no truth value"):
        bool(x < 1.0)
    with pytest.raises(TypeError, match="unsupported operand"):
        (x < 1.0) & True  # noqa: B015
    with pytest.raises(ModelError, match="the comparison '==' needs real expressions"):
        predicate_mask(ld.cis(x) == 1.0, {"x": np.ones(2)})
    with pytest.raises(ModelError, match="reads column.*y, which the events do not have"):
        predicate_mask(ld.scalar("y") < 1.0, {"x": np.ones(2)})
    with pytest.raises(ModelError, match="a selection needs a Predicate"):
        predicate_mask(x, {"x": np.ones(2)})
