"""What the cluster tests ask Dask about prepared datasets (where they are, what was recomputed)."""

from __future__ import annotations

import logging
import os
import select
import time
from pathlib import Path

import pytest


def local_cluster(n_workers: int = 2, threads: int = 1, silence_logs: int = 50):
    """Yield a client of a fresh LocalCluster of worker processes; close both after."""
    import distributed

    cluster = distributed.LocalCluster(n_workers=n_workers, threads_per_worker=threads, processes=True,
                                       dashboard_address=":0", silence_logs=silence_logs)
    client = distributed.Client(cluster)
    yield client
    client.close()
    cluster.close()


def holders(client, prepared) -> dict[str, list[int]]:
    """Worker address -> the partitions of ``prepared`` it holds (Dask's who_has)."""
    who = client.who_has(prepared.partitions)
    out: dict[str, list[int]] = {}
    for i, f in enumerate(prepared.partitions):
        for addr in who[f.key]:
            out.setdefault(addr, []).append(i)
    return out


def recomputed(client, prepared) -> int:
    """Partitions of ``prepared`` that Dask computed more than once (lost, then recomputed)."""
    keys = [f.key for f in prepared.partitions]
    story = client.run_on_scheduler(lambda dask_scheduler: dask_scheduler.story(*keys))
    return sum(1 for k in keys if sum(1 for t in story if t[0] == k and t[2] == "memory") > 1)


def wait_until(condition, seconds: float, what: str) -> None:
    """Poll ``condition`` until it holds; fail the test after ``seconds``.

    Only for state that no event announces (the scheduler's worker list, the client's
    status): the condition decides, ``seconds`` only bounds a hang and is never asserted."""
    end = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > end:
            pytest.fail(f"waited {seconds} s for {what}")
        time.sleep(0.02)


class Signal:
    """A one-shot signal between processes (the test and its cluster's workers) through a FIFO.

    :meth:`set` writes one byte, which stays in the pipe; :func:`wait_signal` blocks in
    ``select`` until it is there: no polling and no clock, only a bound on a hang.  The
    test's process holds the pipe open (read-write, so that no open ever blocks) until
    :meth:`close`, so a signal set before anyone waits is not lost.
    """

    def __init__(self, path: Path) -> None:
        self.path = str(path)
        os.mkfifo(self.path)
        self._fd = os.open(self.path, os.O_RDWR | os.O_NONBLOCK)

    def set(self) -> None:
        set_signal(self.path)

    def wait(self, seconds: float, what: str) -> None:
        """Block until the signal is set; fail the test after ``seconds`` (a hang)."""
        if not wait_signal(self.path, seconds):
            pytest.fail(f"waited {seconds} s for {what}: it never came")

    def close(self) -> None:
        os.close(self._fd)


def set_signal(path: str) -> None:
    """Set the :class:`Signal` at ``path`` (from any process, while its owner holds it open)."""
    fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
    try:
        os.write(fd, b"!")
    finally:
        os.close(fd)


def wait_signal(path: str, seconds: float) -> bool:
    """Whether the :class:`Signal` at ``path`` was set within ``seconds`` (any process)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        return bool(select.select([fd], [], [], seconds)[0])  # the byte is left for other waiters
    finally:
        os.close(fd)


#: Loggers whose records a user sees (distributed's and tornado's do not propagate to the root).
LOGGERS = ("", "distributed", "tornado")


def _nanny_close_race(text: str) -> bool:
    """distributed's own race (2025.x): a nanny whose worker exited gracefully (retired by
    ``adapt``) closes its rpc pool while the cluster closes the nanny, and logs the
    ``CancelledError`` of that close. No laddu-dask frame is in it; about 1 run in 5 of
    ``test_adapt_during_a_fit`` hit it, with the fit's result unchanged."""
    return ("nanny.py" in text and "in _on_worker_exit" in text and "laddu_dask" not in text
            and text.rstrip().endswith("CancelledError"))


class Printed(logging.Handler):
    """What a test's cluster printed: this process's file descriptors (``capfd``), its log
    records of level ERROR or with a traceback (distributed's handlers write to the stream
    they found at import, which ``capfd`` does not see), and the logs the workers and
    their nannies keep (what they print; LocalCluster's ``silence_logs`` sets their level).
    """

    def __init__(self, capfd) -> None:
        super().__init__(logging.NOTSET)
        self.capfd = capfd
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        printed = record.levelno >= logging.ERROR or record.exc_info
        if printed and not _nanny_close_race(self.format(record)):
            self.records.append(record)

    def assert_quiet(self, client) -> None:
        """Fail if anything printed a traceback or an error."""
        err = self.capfd.readouterr().err
        assert "Traceback" not in err, err
        assert " - ERROR - " not in err and " - CRITICAL - " not in err, err
        assert not self.records, [self.format(r) for r in self.records]
        for nanny in (False, True):
            for addr, lines in client.get_worker_logs(nanny=nanny).items():
                bad = [text for level, text in lines
                       if (level in ("ERROR", "CRITICAL") or "Traceback" in text)
                       and not _nanny_close_race(text)]  # in the nanny's own log too
                assert not bad, (addr, bad)


@pytest.fixture
def printed(capfd):
    """A :class:`Printed` on this process's loggers; start a cluster fixture after it."""
    handler = Printed(capfd)
    for name in LOGGERS:
        logging.getLogger(name).addHandler(handler)
    yield handler
    for name in LOGGERS:
        logging.getLogger(name).removeHandler(handler)
