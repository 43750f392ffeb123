"""The public API against its checked-in snapshot (``tests/public_api.txt``): a name added,
removed or renamed, or a signature changed, fails here until the snapshot is written again
on purpose (``python3 tests/public_api.py --write``) and the change is in the diff."""

import difflib

from public_api import SNAPSHOT, _entry, render


def test_the_public_api_is_its_snapshot():
    current, saved = render(), SNAPSHOT.read_text()
    diff = "\n".join(difflib.unified_diff(saved.splitlines(), current.splitlines(), "tests/public_api.txt",
                                          "laddu_dask now", lineterm=""))
    assert current == saved, (
        "the public API differs from tests/public_api.txt; if the change is meant, run "
        f"`python3 tests/public_api.py --write` and commit the file:\n{diff}")


def test_the_snapshot_sees_a_changed_signature():
    def fit(likelihood, *, restarts: int = 1):
        """A stand-in."""

    def renamed(likelihood, *, restart: int = 1):
        """The same with a keyword renamed."""

    assert _entry("fit", fit, 0) != _entry("fit", renamed, 0)
    assert _entry("fit", fit, 0) == ["fit: function(likelihood, *, restarts: int = 1)"]
