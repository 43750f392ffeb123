"""``AnalysisSnapshot``: the fits of an analysis under names, saved as one file (laddu's).

A snapshot maps paths (``"bins/3/central"``) to :class:`~laddu_dask.FitArtifact` objects;
:meth:`~AnalysisSnapshot.alias_fit` gives an existing fit a second path.  ``save`` writes
each artifact once however many paths share it, and ``load`` restores the sharing (the
paths of one artifact give the same object back).  As laddu's, ``save`` refuses to replace
an existing file unless ``overwrite=True``.

Paths are non-empty strings without ``..`` in them (``"a/../b"`` and ``"a..b"`` are refused,
as laddu refuses them).

Examples
--------
>>> import os, tempfile
>>> from laddu_dask.likelihood.artifact import FitArtifact
>>> art = FitArtifact(parameter_names=["a"], values=[1.5], objective=2.0, outcome="converged",
...                   terminal_message="", diagnostics={}, covariance=None, standard_errors=None,
...                   likelihood_fingerprint="0123456789abcdef")
>>> snap = AnalysisSnapshot()
>>> snap.add_fit("fits/central", art)
>>> snap.alias_fit("best", "fits/central")
>>> path = os.path.join(tempfile.mkdtemp(), "analysis.json")
>>> snap.save(path)
>>> back = AnalysisSnapshot.load(path)
>>> back.fit("best") is back.fit("fits/central"), back.fit("best").values.tolist()
(True, [1.5])
"""

from __future__ import annotations

import os
from typing import Any

from laddu_dask.errors import FitArtifactError
from laddu_dask.files import read_json, write_json
from laddu_dask.likelihood import artifact_fields as fields
from laddu_dask.likelihood.artifact import FitArtifact

__all__ = ["AnalysisSnapshot"]

#: The ``"kind"`` of a snapshot's JSON file.
FILE_KIND = "laddu_dask.AnalysisSnapshot"
SCHEMA_VERSION = 1


def _check_path(path: Any, keyword: str = "path") -> str:
    if not isinstance(path, str):
        raise TypeError(f"{keyword} must be a str, got {type(path).__name__}")
    if not path or ".." in path:
        raise FitArtifactError(f"{keyword} {path!r} is not a snapshot path: give a non-empty path without "
                               "'..'")
    return path


class AnalysisSnapshot:
    """Fit artifacts under paths, with aliases (laddu's ``AnalysisSnapshot``)."""

    def __init__(self) -> None:
        self._fits: dict[str, FitArtifact] = {}

    def add_fit(self, path: str, artifact: FitArtifact) -> None:
        """Store ``artifact`` under ``path``.

        Raises
        ------
        FitArtifactError
            ``path`` is taken or malformed.
        TypeError
            ``artifact`` is not a :class:`~laddu_dask.FitArtifact`.
        """
        _check_path(path)
        if not isinstance(artifact, FitArtifact):
            raise TypeError(f"artifact must be a FitArtifact (FitResult.artifact()), got "
                            f"{type(artifact).__name__}")
        if path in self._fits:
            raise FitArtifactError(f"path {path!r} already holds a fit in this snapshot")
        self._fits[path] = artifact

    def alias_fit(self, path: str, existing: str) -> None:
        """Make ``path`` a second name of the fit at ``existing``.

        Raises
        ------
        FitArtifactError
            ``path`` is taken or malformed, or ``existing`` holds no fit.
        """
        self.add_fit(path, self.fit(existing))

    def fit(self, path: str) -> FitArtifact:
        """The fit at ``path``.

        Raises
        ------
        FitArtifactError
            No fit is stored at ``path`` (the message lists the paths there are).
        """
        try:
            return self._fits[path]
        except KeyError:
            raise FitArtifactError(f"no fit at path {path!r} in this snapshot (paths: "
                                   f"{sorted(self._fits)})") from None

    def __repr__(self) -> str:
        return f"AnalysisSnapshot({len(self._fits)} paths: {', '.join(sorted(self._fits))})"

    def save(self, path: str | os.PathLike[str], *, overwrite: bool = False) -> None:
        """Write the snapshot as JSON, atomically, each shared artifact once.

        Raises
        ------
        UnsafeOutputError
            ``path`` exists and ``overwrite`` is False.
        """
        ids: dict[int, int] = {}
        artifacts: list[dict[str, Any]] = []
        entries = []
        for name in sorted(self._fits):
            art = self._fits[name]
            if id(art) not in ids:
                ids[id(art)] = len(artifacts)
                artifacts.append(art.to_dict())
            entries.append({"path": name, "artifact_id": ids[id(art)]})
        write_json(path, {"kind": FILE_KIND, "schema_version": SCHEMA_VERSION, "entries": entries,
                          "artifacts": artifacts}, overwrite=overwrite)

    @staticmethod
    def load(path: str | os.PathLike[str]) -> AnalysisSnapshot:
        """The snapshot :meth:`save` wrote.

        Raises
        ------
        FitArtifactError
            Not a snapshot, or a field or artifact in it is malformed (naming the file and
            the field).
        """
        where = os.fspath(path)
        try:
            record = read_json(path, FILE_KIND)
        except ValueError as exc:
            raise FitArtifactError(str(exc)) from None
        if record.get("schema_version") != SCHEMA_VERSION:
            raise FitArtifactError(f"{where}: field 'schema_version' is {record.get('schema_version')!r}; "
                                   f"this laddu-dask reads {SCHEMA_VERSION}")
        stored, entries = record.get("artifacts"), record.get("entries")
        if not isinstance(stored, list) or not isinstance(entries, list):
            raise FitArtifactError(f"{where}: fields 'artifacts' and 'entries' must be lists")
        artifacts = [FitArtifact.from_dict(a, f"{where}: artifacts[{i}]") for i, a in enumerate(stored)]
        snapshot = AnalysisSnapshot()
        for i, entry in enumerate(entries):
            at = f"{where}: entries[{i}]"
            entry = fields.check_record(entry, at)
            index = fields.integer(entry, "artifact_id", at)
            if index >= len(artifacts):
                raise FitArtifactError(f"{at}: field 'artifact_id' is {index}, but the file holds "
                                       f"{len(artifacts)} artifacts")
            try:
                snapshot.add_fit(fields.text(entry, "path", at), artifacts[index])
            except FitArtifactError as exc:
                raise FitArtifactError(f"{at}: {exc}") from None
        return snapshot
