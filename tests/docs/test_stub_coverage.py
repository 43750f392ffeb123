"""laddu 0.28.1's public API, counted from its own stubs (see ``tests/stub_coverage.py``).

The count only rises: a change that removes a laddu name or keyword laddu-dask had, or turns a
property into a method, fails here. Run ``python3 tests/stub_coverage.py -v`` for the list.
"""

from __future__ import annotations

import types

import pytest
from laddu_reference import needs_laddu
from stub_coverage import Entry, judge, summary, verdicts

#: entries of laddu's stubs that laddu-dask answers the same (raise it as names are added)
SAME_AT_LEAST = 1140


@needs_laddu
def test_laddu_names_laddu_dask_has_do_not_fall(capsys):
    found = verdicts()
    with capsys.disabled():
        print("\nladdu 0.28.1's stubs:", summary(found))
    same = sum(v.status == "same" for v in found)
    assert same >= SAME_AT_LEAST, [v.entry.path for v in found if v.status != "same"]


class _Ours:
    def __init__(self, a, *, b=1):
        self.seen = a

    @property
    def size(self):
        return 1

    def shape(self):
        return ()

    def fit(self, initial=None, *, config=None):
        return initial


@pytest.mark.parametrize(("entry", "status", "reason"), [
    (Entry("Ours", "class", (), ("a", "b")), "same", ""),
    (Entry("Ours", "class", (), ("a", "c")), "differ", "does not accept c"),
    (Entry("Ours", "class", ("a", "z"), ()), "differ", "does not accept z (positional)"),
    (Entry("Ours.size", "property", (), ()), "same", ""),
    (Entry("Ours.seen", "property", (), ()), "same", ""),  # set in __init__
    (Entry("Ours.shape", "property", (), ()), "differ", "a method where laddu has a property"),
    (Entry("Ours.size", "method", (), ()), "differ", "an attribute where laddu has a method"),
    (Entry("Ours.fit", "method", (), ("initial", "config")), "same", ""),
    (Entry("Ours.fit", "method", (), ("initial", "seed")), "differ", "does not accept seed"),
    (Entry("Ours.walk", "method", (), ()), "missing", ""),
    (Entry("Theirs", "class", (), ()), "missing", ""),
])
def test_each_entry_is_judged_by_presence_kind_and_keywords(entry, status, reason):
    verdict = judge(entry, types.SimpleNamespace(Ours=_Ours))
    assert (verdict.status, verdict.reason) == (status, reason)
