"""Batch fits on clusters: a running scheduler, SLURM/PBS worker jobs (with fake batch
systems), the scheduler's sockets and TLS, failed submissions, waits and interrupts."""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import psutil
import pytest
from batch_helpers import (
    EXAMPLES,
    JOBQUEUE,
    assert_one_error_line,
    command_env,
    fake_queue,
    interrupt_when,
    laddu_dask,
    read_result,
    write_config,
)

from laddu_dask.jobs import job_script, load_config, main
from laddu_dask.jobs.cluster import jobqueue_cluster

#: Seconds a ``laddu-dask`` command may run: a bound on a hang, never reached under load.
COMMAND_BOUND = 240
#: A SLURM/PBS scheduler's dashboard on a free port, for a test that reads the command's whole
#: stderr: the default 127.0.0.1:8787 may be held by another process on the machine (another
#: test, under pytest-xdist), and distributed then warns on stderr that it took another port.
FREE_DASHBOARD = 'dashboard_address = "127.0.0.1:0"\n'


@pytest.mark.timeout(300)
def test_scheduler_address_runs_on_a_distributed_cluster(tmp_path, sample):
    distributed = pytest.importorskip("distributed")
    config = write_config(tmp_path, sample)
    local = tmp_path / "local.json"
    assert main([str(config), "--output", str(local), "--quiet"]) == 0
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                  dashboard_address=None) as cluster:
        out = tmp_path / "cluster.json"
        code = main([str(config), "--scheduler", cluster.scheduler_address, "--output", str(out),
                     "--quiet"])
        assert code == 0
    remote, here = read_result(out), read_result(local)
    assert remote["execution"]["scheduler"] == cluster.scheduler_address
    assert remote["execution"]["workers"] == 2
    assert remote["valid"] is True
    # exact partial sums: the same likelihood wherever it is evaluated, so the same fit to the
    # last bit (measured; was asserted to 1e-13 in fval and 1e-9 in the values)
    assert remote["fval"] == here["fval"] and remote["n_calls"] == here["n_calls"]
    assert remote["values"] == here["values"] and remote["errors"] == here["errors"]
    assert remote["covariance"] == here["covariance"]


@pytest.mark.timeout(300)
def test_cluster_without_workers_exits_3_and_writes_nothing(tmp_path, sample, capsys):
    distributed = pytest.importorskip("distributed")
    config = write_config(tmp_path, sample, "[cluster]\nwait_for_workers = 1\nwait_timeout = 0.2\n")
    with distributed.LocalCluster(n_workers=0, processes=False, dashboard_address=None) as cluster:
        code = main([str(config), "--scheduler", cluster.scheduler_address])
    err = capsys.readouterr().err
    assert code == 3
    assert err.strip().splitlines()[-1].startswith("laddu-dask fit: error: ")
    assert "could not start or reach the Dask cluster" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fit.toml"]


@pytest.fixture
def no_submission(tmp_path, monkeypatch) -> Path:
    """A log file that any call of a (fake) queue command would create."""
    return fake_queue(tmp_path, monkeypatch, accept=False)


def test_slurm_job_script(tmp_path, sample, no_submission, capsys):
    config = write_config(tmp_path, sample,
                          JOBQUEUE.format(kind="slurm", directive="--constraint=haswell"))
    script = job_script(config)
    assert script.startswith("#!")
    for fragment in ("#SBATCH --cpus-per-task=3", "#SBATCH --mem=5G", "#SBATCH -t 00:42:00",
                     "#SBATCH -p shortq", "#SBATCH -A acct42", "#SBATCH --constraint=haswell",
                     "distributed.cli.dask_worker"):
        assert fragment in script, (fragment, script)
    assert main([str(config), "--print-job-script"]) == 0
    assert "#SBATCH -t 00:42:00" in capsys.readouterr().out
    assert not no_submission.exists()
    assert not (tmp_path / "fit.result.json").exists()



@pytest.mark.parametrize("kind", ["slurm", "pbs"])
def test_print_job_script_starts_nothing(kind, tmp_path, sample, no_submission, monkeypatch, capsys):
    """--print-job-script started a scheduler and a dashboard just to print (and warned that
    port 8787 was taken); now the script comes from dask-jobqueue without starting anything."""
    import socket
    import threading

    from distributed.deploy.spec import SpecCluster

    def start(*args, **kwargs):
        raise AssertionError("a scheduler was started")

    monkeypatch.setattr(SpecCluster, "__init__", start)  # starts the scheduler and its loop
    config = write_config(tmp_path, sample, JOBQUEUE.format(kind=kind, directive="-x"))
    threads = set(threading.enumerate())
    with socket.socket() as taken:  # the dashboard's port, as on a shared login node
        taken.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            taken.bind(("127.0.0.1", 8787))
            taken.listen()
        except OSError:
            pass  # taken already
        before = listening()
        assert main([str(config), "--print-job-script"]) == 0
        assert listening() == before
    out, err = capsys.readouterr()
    assert err == ""  # no "Port 8787 is already in use"
    assert out.startswith("#!") and "-x" in out
    assert "distributed.cli.dask_worker tcp://<insert-scheduler-address-here>:8786 " in out
    assert "--protocol tls://" in out  # the settings went through dask-jobqueue
    assert not [t.name for t in threading.enumerate() if t not in threads]  # no event loop


def test_pbs_job_script(tmp_path, sample, no_submission):
    config = write_config(tmp_path, sample, JOBQUEUE.format(kind="pbs", directive="-m abe")
                          + 'resource_spec = "select=1:ncpus=3:mem=5GB"\n')
    script = job_script(load_config(config))
    for fragment in ("#PBS -l select=1:ncpus=3:mem=5GB", "#PBS -l walltime=00:42:00",
                     "#PBS -q shortq", "#PBS -A acct42", "#PBS -m abe"):
        assert fragment in script, (fragment, script)
    assert not no_submission.exists()


def test_slurm_example_job_script(data_env, no_submission, monkeypatch):
    monkeypatch.setenv("SLURM_ACCOUNT", "physics7")
    config = load_config(EXAMPLES / "slurm_fit.toml")
    assert config.cluster.kind == "slurm" and config.cluster.jobs == 4
    script = job_script(config)
    for fragment in ("--cpus-per-task=8", "-t 02:00:00", "-A physics7", "--exclusive"):
        assert fragment in script
    assert not no_submission.exists()


def test_print_job_script_needs_a_jobqueue_cluster(tmp_path, sample, capsys):
    config = write_config(tmp_path, sample)
    assert main([str(config), "--print-job-script"]) == 2
    assert "no batch-job cluster is configured" in capsys.readouterr().err


@pytest.mark.timeout(300)
def test_sbatch_example_runs_the_slurm_config():
    text = (EXAMPLES / "submit_fit.sbatch").read_text()
    assert text.startswith("#!/bin/bash")
    assert "laddu-dask fit \"$CONFIG\" --output" in text
    assert "CONFIG=examples/slurm_fit.toml" in text
    assert shutil.which("bash") is None or subprocess.run(
        ["bash", "-n", str(EXAMPLES / "submit_fit.sbatch")]).returncode == 0


@pytest.mark.timeout(300)
def test_slurm_run_submits_jobs_then_cancels_them(tmp_path, sample, monkeypatch, capsys):
    """The fit path scales to `jobs` worker jobs; no worker arrives (fake sbatch): exit 3."""
    log = fake_queue(tmp_path, monkeypatch, accept=True)
    folder = tmp_path / "cfg"
    folder.mkdir()
    config = write_config(folder, sample, JOBQUEUE.format(kind="slurm", directive="--exclusive")
                          + "wait_timeout = 0.5\n")
    assert main([str(config)]) == 3
    err = capsys.readouterr().err
    assert "could not start or reach the Dask cluster" in err
    calls = log.read_text()
    assert calls.count("sbatch ") == 2 and calls.count("#SBATCH --cpus-per-task=3") == 2
    assert "scancel 4242" in calls
    assert sorted(p.name for p in folder.iterdir()) == ["fit.toml"]


def test_jobqueue_kind_without_dask_jobqueue_is_bad_input(tmp_path, sample, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "dask_jobqueue", None)
    config = write_config(tmp_path, sample, "[cluster]\nkind = 'pbs'\ncores = 2\n")
    assert main([str(config), "--print-job-script"]) == 2
    assert "pip install 'laddu-dask[jobqueue]'" in capsys.readouterr().err
    assert main([str(config)]) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fit.toml"]


# ----------------------------------------------------------------------------- scheduler network


def listening() -> set[tuple[str, int]]:
    """``(ip, port)`` of every socket this process listens on (the kernel's view)."""
    return {(c.laddr.ip, c.laddr.port) for c in psutil.Process().net_connections(kind="inet")
            if c.status == psutil.CONN_LISTEN}


def default_ip() -> str:
    from distributed.utils import get_ip

    return get_ip()


NETWORK = {
    # case: ([cluster] lines, the scheduler's address (None: this machine's default-route one), TLS)
    "defaults": ("", None, True),
    "scheduler_host": ('scheduler_host = "127.0.0.1"\n', "127.0.0.1", True),
    "workers' interface": ('interface = "lo"\n', "127.0.0.1", True),
    "scheduler_interface": ('scheduler_interface = "lo"\n', "127.0.0.1", True),
    "tls = false": ("tls = false\n", None, False),
}


@pytest.mark.timeout(300)
@pytest.mark.parametrize("case", list(NETWORK))
def test_jobqueue_scheduler_listens_on_one_address_dashboard_on_localhost(case, tmp_path, sample,
                                                                          no_submission):
    """No socket on every interface; TLS by default, with certificates the worker jobs read."""
    extra, ip, tls = NETWORK[case]
    ip = ip or default_ip()
    config = load_config(write_config(tmp_path, sample, JOBQUEUE.format(kind="slurm", directive="-x")
                                      + extra))
    before = listening()
    with jobqueue_cluster(config) as cluster:
        new = listening() - before
        address = cluster.scheduler_address
        script = cluster.job_script()
        args = script.split()
        certificates = {flag: args[args.index(flag) + 1] for flag in
                        ("--tls-ca-file", "--tls-cert", "--tls-key") if flag in args}
        pem = {flag: Path(path).read_text() for flag, path in certificates.items()}
        folders = {os.path.dirname(path) for path in certificates.values()}
        modes = {stat.S_IMODE(os.stat(folder).st_mode) for folder in folders}
    scheme = "tls://" if tls else "tcp://"
    assert address.startswith(f"{scheme}{ip}:"), address
    port = int(address.rsplit(":", 1)[1])
    assert (ip, port) in new, (new, address)
    dashboard = new - {(ip, port)}
    assert len(dashboard) == 1 and {host for host, _ in dashboard} == {"127.0.0.1"}, new
    assert not {host for host, _ in new} & {"0.0.0.0", "::"}
    assert f"distributed.cli.dask_worker {address} " in script
    if tls:
        assert "--protocol tls://" in script
        assert set(certificates) == {"--tls-ca-file", "--tls-cert", "--tls-key"}, script
        assert "BEGIN CERTIFICATE" in pem["--tls-ca-file"] and "PRIVATE KEY" in pem["--tls-key"]
        assert len(folders) == 1 and modes == {0o700}
        assert os.path.dirname(folders.pop()) == str(tmp_path)  # the current folder by default
        assert not any(Path(path).exists() for path in certificates.values())  # removed
    else:
        assert "--tls" not in script and "--protocol" not in script
    assert not listening() - before  # closed


@pytest.mark.timeout(300)
def test_jobqueue_cluster_with_user_certificates(tmp_path, sample, no_submission):
    from distributed.security import Security

    temporary = Security.temporary()
    for name, pem in (("ca.pem", temporary.tls_ca_file), ("c.pem", temporary.tls_worker_cert),
                      ("k.pem", temporary.tls_worker_key)):
        (tmp_path / name).write_text(pem)
    extra = ('scheduler_host = "127.0.0.1"\ntls_ca_file = "ca.pem"\ntls_cert = "c.pem"\n'
             'tls_key = "k.pem"\ndashboard_address = "127.0.0.1:0"\n')
    config = load_config(write_config(tmp_path, sample, JOBQUEUE.format(kind="pbs", directive="-x")
                                      + extra))
    with jobqueue_cluster(config) as cluster:
        assert cluster.scheduler_address.startswith("tls://127.0.0.1:")
        script = cluster.job_script()
    for flag, name in (("--tls-ca-file", "ca.pem"), ("--tls-cert", "c.pem"), ("--tls-key", "k.pem")):
        assert f"{flag} {tmp_path / name}" in script
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".laddu-dask-tls")]


BAD_CLUSTER = {
    "half the certificates": ('tls_cert = "c.pem"\n', "[cluster]", "need all of tls_ca_file, tls_cert "
                              "and tls_key (missing: tls_ca_file, tls_key)"),
    "certificates without tls": ('tls = false\ntls_cert = "c.pem"\n', "[cluster] tls_cert",
                                 "is given with tls = false"),
    "missing certificate": ('tls_ca_file = "nope.pem"\ntls_cert = "c.pem"\ntls_key = "c.pem"\n',
                            "[cluster] tls_ca_file", "no such file"),
    "host in scheduler_options": ('scheduler_options = { host = "0.0.0.0" }\n',
                                  "[cluster] scheduler_options host", "set by [cluster] scheduler_host"),
    "security passed through": ("[cluster.jobqueue_options]\nsecurity = false\n",
                                "[cluster].jobqueue_options security", "set by [cluster] tls"),
    "host and interface": ('scheduler_host = "127.0.0.1"\nscheduler_interface = "lo"\n', "[cluster]",
                           "only one of scheduler_host and scheduler_interface"),
    "tls without kind": (None, "[cluster] tls", "needs kind"),
    "missing shared_temp_directory": ('shared_temp_directory = "nowhere"\n',
                                      "[cluster] shared_temp_directory", "nowhere"),
}


@pytest.mark.parametrize("case", sorted(BAD_CLUSTER))
def test_bad_cluster_security_settings_exit_2(case, tmp_path, sample, no_submission, capsys):
    extra, *fragments = BAD_CLUSTER[case]
    (tmp_path / "c.pem").write_text("not used\n")
    cluster = "[cluster]\ntls = true\n" if extra is None else (
        JOBQUEUE.format(kind="slurm", directive="-x") + extra)
    config = write_config(tmp_path, sample, cluster)
    assert main([str(config), "--print-job-script"]) == 2
    assert_one_error_line(capsys.readouterr().err, "laddu-dask fit", str(config), *fragments)


FAKE_SLURM = {
    # a fake sbatch that runs the worker job here, in its own process group (job id: its pid)
    "sbatch": '#!/bin/sh\ndir=$(dirname "$0")\ncp "$1" "$dir/job.$$.sh"\n'
              'setsid sh "$dir/job.$$.sh" > "$dir/job.$$.log" 2>&1 < /dev/null &\n'
              'echo "Submitted batch job $!"\n',
    "scancel": '#!/bin/sh\necho "scancel $1" >> "$(dirname "$0")/scancel.log"\n'
               'kill -TERM -- "-$1" 2>/dev/null\nexit 0\n',
}


@pytest.mark.timeout(600)
@pytest.mark.slow
def test_fit_over_tls_on_worker_jobs_started_by_a_fake_sbatch(tmp_path, sample):
    """The temporary certificates reach the workers: a fit runs on them over TLS."""
    pytest.importorskip("dask_jobqueue")
    if shutil.which("setsid") is None:
        pytest.skip("needs setsid")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, text in FAKE_SLURM.items():
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    extra = ('[cluster]\nkind = "slurm"\ncores = 1\nmemory = "2GB"\nscheduler_host = "127.0.0.1"\n'
             'worker_extra_args = ["--host", "127.0.0.1"]\nwait_timeout = 300\n')
    config = write_config(tmp_path, sample, extra)
    out = tmp_path / "r.json"
    proc = laddu_dask("fit", str(config), "--output", str(out), cwd=tmp_path, timeout=2 * COMMAND_BOUND,
                      env=command_env(PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result = read_result(out)
    assert result["valid"] is True
    assert result["execution"]["scheduler"].startswith("slurm (1 job(s), scheduler tls://127.0.0.1:")
    assert result["execution"]["workers"] == 1
    assert "scancel" in (bin_dir / "scancel.log").read_text()
    assert "--tls-key" in next(bin_dir.glob("job.*.sh")).read_text()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".laddu-dask-tls")]


# ----------------------------------------------------------------------------- submissions, waits


@pytest.mark.timeout(300)
def test_slurm_fit_without_sbatch_exits_3_at_once(tmp_path, sample):
    pytest.importorskip("dask_jobqueue")
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    config = write_config(tmp_path, sample, "[cluster]\nkind = 'slurm'\ncores = 1\nmemory = '1GB'\n"
                                            "wait_timeout = 3600\n")
    # "at once": a wait for workers would run to wait_timeout, far past the command's bound
    # (TimeoutExpired); no elapsed time is asserted
    proc = laddu_dask("fit", str(config), env=command_env(PATH=str(empty)), timeout=COMMAND_BOUND)
    assert proc.returncode == 3, proc.stderr
    assert "waiting for workers" not in proc.stdout
    assert_one_error_line(proc.stderr, "laddu-dask fit", "the submit command 'sbatch' is not on PATH")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty-bin", "fit.toml"]


@pytest.mark.timeout(300)
def test_failed_submission_exits_3_without_waiting_for_wait_timeout(tmp_path, sample):
    """A failing sbatch: one line with its message, no traceback, no wait for wait_timeout."""
    pytest.importorskip("dask_jobqueue")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "sbatch").write_text('#!/bin/sh\necho "sbatch: error: Batch job submission failed: '
                                    'Invalid account or account/partition combination" >&2\nexit 1\n')
    (bin_dir / "sbatch").chmod(0o755)
    config = write_config(tmp_path, sample, "[cluster]\nkind = 'slurm'\ncores = 1\nmemory = '1GB'\n"
                                            f"wait_timeout = 3600\n{FREE_DASHBOARD}")
    # the submission fails, so only a wait to wait_timeout (far past the command's bound,
    # TimeoutExpired) could keep it from exiting 3; no elapsed time is asserted
    proc = laddu_dask("fit", str(config), cwd=tmp_path, timeout=COMMAND_BOUND,
                      env=command_env(PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}"))
    assert proc.returncode == 3, proc.stderr
    assert_one_error_line(proc.stderr, "laddu-dask fit", "submitting a worker job failed",
                          "Invalid account or account/partition combination")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bin", "fit.toml"]


@pytest.mark.timeout(300)
def test_waiting_for_workers_says_how_many_arrived(tmp_path, sample, capsys):
    distributed = pytest.importorskip("distributed")
    config = write_config(tmp_path, sample, "[cluster]\nwait_for_workers = 2\nwait_timeout = 1.6\n")
    with distributed.LocalCluster(n_workers=1, processes=False, protocol="tcp://", host="127.0.0.1",
                                  dashboard_address=None) as cluster:
        code = main([str(config), "--scheduler", cluster.scheduler_address])
    captured = capsys.readouterr()
    assert code == 3
    # a report comes before the time-out (1.6 s is past the first report's second), with the
    # scheduler's count; its second is the clock's (1 on a free machine): the schedule is
    # pinned by the next test's clock
    assert re.search(r"^waiting for workers: 1 of 2 arrived after \d+ s \(wait_timeout = 1\.6 s\)$",
                     captured.out, re.MULTILINE), captured.out
    assert_one_error_line(captured.err, "laddu-dask fit", "only 1 of 2 worker(s) arrived within 1.6 s")


class _Clock:
    """A clock for :func:`_wait_for_workers`: it moves only as the test says."""

    def __init__(self, jumps: dict[int, float] | None = None) -> None:
        self.now, self.reads, self.jumps = 1000.0, 0, jumps or {}

    def monotonic(self) -> float:
        self.reads += 1
        self.now += self.jumps.get(self.reads, 0.0)  # a pause of the process (load) before this read
        return self.now


class _Scheduler:
    """A client whose scheduler has ``have`` workers; each wait takes its whole timeout."""

    def __init__(self, clock: _Clock, have: int, arrive_at: float = float("inf")) -> None:
        self.clock, self.have, self.arrive_at, self.polls = clock, have, arrive_at, []

    def wait_for_workers(self, wanted: int, timeout: float) -> None:
        from distributed.exceptions import WorkerStartTimeoutError

        assert timeout > 0  # distributed waits forever on 0
        self.polls.append(timeout)
        if self.clock.now + timeout >= self.arrive_at:
            self.clock.now = self.arrive_at
            return
        self.clock.now += timeout
        raise WorkerStartTimeoutError(self.have, wanted, timeout)


def test_waiting_for_workers_reports_at_1_s_then_every_5_s_until_wait_timeout(monkeypatch):
    from laddu_dask.errors import ClusterTimeoutError
    from laddu_dask.jobs import cluster as jobs_cluster

    clock = _Clock()
    monkeypatch.setattr(jobs_cluster, "time", clock)
    client, said = _Scheduler(clock, have=1), []
    with pytest.raises(ClusterTimeoutError, match=r"^only 1 of 2 worker\(s\) arrived within 12 s "
                                                  r"\(wait_timeout\)$"):
        jobs_cluster._wait_for_workers(client, 2, 12.0, said.append)
    assert said == [f"waiting for workers: 1 of 2 arrived after {s} s (wait_timeout = 12 s)"
                    for s in (1, 6, 11)]
    assert client.polls == [0.5] * 24 and clock.now == 1012.0
    clock = _Clock()
    monkeypatch.setattr(jobs_cluster, "time", clock)
    client, said = _Scheduler(clock, have=1, arrive_at=1007.25), []
    jobs_cluster._wait_for_workers(client, 2, 12.0, said.append)  # the second worker came
    assert len(client.polls) == 15 and len(said) == 2


def test_waiting_for_workers_asks_the_scheduler_before_it_times_out(monkeypatch):
    """The process paused 1.7 s right after the wait began (a loaded machine): the report and
    the error still say how many workers the scheduler has (the scheduler was not asked
    before: "0 of 2"), and a report comes before the time-out."""
    from laddu_dask.errors import ClusterTimeoutError
    from laddu_dask.jobs import cluster as jobs_cluster

    clock = _Clock(jumps={2: 1.7})
    monkeypatch.setattr(jobs_cluster, "time", clock)
    client, said = _Scheduler(clock, have=1), []
    with pytest.raises(ClusterTimeoutError, match=r"^only 1 of 2 worker\(s\) arrived within 1\.6 s"):
        jobs_cluster._wait_for_workers(client, 2, 1.6, said.append)
    assert said == ["waiting for workers: 1 of 2 arrived after 2 s (wait_timeout = 1.6 s)"]
    assert client.polls == [0.01]


# ----------------------------------------------------------------------------- interrupts

INTERRUPTED = "laddu-dask fit: interrupted (SIGINT); no result written\n"


# a command whose body is interrupted inside code run from source text, as dataclasses,
# namedtuple or a constant fold run theirs; run as `python -m` (CPython's SIGINT re-raise at
# exit applies to -m and -c, not to the console script)
INTERRUPTED_IN_EXEC = """\
import sys
from laddu_dask.jobs.command import run_command

def body():
    exec("raise KeyboardInterrupt")

sys.exit(run_command("prog", body))
"""


def test_an_interrupt_raised_in_code_run_from_text_still_exits_130(tmp_path):
    """CPython remembers a KeyboardInterrupt that left ``exec`` of a string even once it is
    caught, and ``python -m`` then died by SIGINT at exit (status -2), not with the command's
    130: the local-fit SIGINT test failed so, now and then, when the signal landed in such code."""
    (tmp_path / "interrupted_in_exec.py").write_text(INTERRUPTED_IN_EXEC)
    proc = subprocess.run([sys.executable, "-m", "interrupted_in_exec"], capture_output=True, text=True,
                          cwd=tmp_path, env=command_env(), timeout=COMMAND_BOUND)
    assert (proc.returncode, proc.stderr) == (130, "prog: interrupted (SIGINT); nothing was written\n")


def test_distributeds_cancel_race_after_a_ctrl_c_is_not_printed():
    """distributed's ``sync`` cancel callback fails with a NameError when Ctrl-C lands as a
    blocking call starts; that record (only it) is dropped, so the command's one line stays."""
    import logging

    distributed_utils = pytest.importorskip("distributed.utils")
    from laddu_dask.jobs.interrupts import DistributedCancelRace

    namespace: dict = {}
    exec(compile("def cancel():\n    return future\n", distributed_utils.__file__, "exec"), namespace)

    def record(func) -> logging.LogRecord:
        try:
            func()
        except NameError as exc:
            return logging.LogRecord("tornado.application", logging.ERROR, __file__, 1,
                                     "Exception in callback", None, (NameError, exc, exc.__traceback__))
        raise AssertionError("no NameError")

    def other():
        return undefined_name  # noqa: F821 - a NameError raised elsewhere

    race = DistributedCancelRace()
    assert not race.filter(record(namespace["cancel"]))
    assert race.filter(record(other))
    assert race.filter(logging.LogRecord("tornado.application", logging.ERROR, __file__, 1, "x", None, None))


@pytest.mark.timeout(300)
def test_sigint_while_waiting_for_a_schedulers_workers_exits_130(tmp_path, sample):
    distributed = pytest.importorskip("distributed")
    config = write_config(tmp_path, sample, "[cluster]\nwait_for_workers = 1\nwait_timeout = 3600\n")
    with distributed.LocalCluster(n_workers=0, processes=False, protocol="tcp://", host="127.0.0.1",
                                  dashboard_address=None) as cluster:
        status, out, err = interrupt_when(["fit", str(config), "--scheduler", cluster.scheduler_address],
                                          "waiting for workers: 0 of 1")
    assert (status, err) == (130, INTERRUPTED)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fit.toml"]


@pytest.mark.timeout(300)
def test_sigint_while_waiting_for_slurm_workers_exits_130(tmp_path, sample, monkeypatch):
    """dask-jobqueue's import made SIGINT exit 0 (its handler calls sys.exit()); the jobs are
    cancelled."""
    log = fake_queue(tmp_path, monkeypatch, accept=True)
    folder = tmp_path / "cfg"
    folder.mkdir()
    config = write_config(folder, sample, "[cluster]\nkind = 'slurm'\ncores = 1\nmemory = '1GB'\n"
                                          f"wait_timeout = 3600\n{FREE_DASHBOARD}")
    status, out, err = interrupt_when(["fit", str(config)], "waiting for workers: 0 of 1",
                                      env=command_env(PATH=os.environ["PATH"]))
    assert (status, err) == (130, INTERRUPTED)
    assert "scancel 4242" in log.read_text()
    assert sorted(p.name for p in folder.iterdir()) == ["fit.toml"]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".laddu-dask-tls")]


@pytest.mark.timeout(300)
def test_sigint_during_a_local_fit_exits_130(tmp_path, sample):
    # a fit, then 100,000 bootstrap fits: hours of work, so that the SIGINT sent once the fit
    # starts lands in it however the machine's load delays the sender (a fit alone of this
    # sample ends in seconds, and an interrupt sent late would find it done: exit 0)
    config = write_config(tmp_path, sample, "[fit]\nstrategy = 2\ntolerance = 1e-6\nbootstrap = 100000\n"
                                            "[execution]\nkernel = 'numpy'\n")
    status, out, err = interrupt_when(["fit", str(config)], "prepared in")
    assert (status, err) == (130, INTERRUPTED)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fit.toml"]


# ----------------------------------------------------------------------------- the sbatch example

FAKE_COMMAND = """#!/bin/sh
# a fake laddu-dask: `fit CONFIG --output RESULT` exits $FAKE_STATUS, writing RESULT if $FAKE_WRITE
[ "$3" = "--print-job-script" ] && exit 0
[ -n "$FAKE_WRITE" ] && echo '{"valid": true}' > "$4"
exit "$FAKE_STATUS"
"""


@pytest.mark.timeout(300)
@pytest.mark.parametrize("fake_status, write, status, last_line", [
    (0, True, 0, "valid fit: results/fit-7.json"),
    (0, False, 3, "laddu-dask fit exited with 0 but wrote no result results/fit-7.json"),
    (1, False, 3, "laddu-dask fit exited with 1 but wrote no result results/fit-7.json"),
    (1, True, 1, "the fit did not converge (valid = false): results/fit-7.json"),
    (130, False, 130, "interrupted; nothing written"),
    (3, False, 3, "the fit could not run (exit 3): see the message above; nothing written"),
])
def test_sbatch_example_believes_the_result_file(fake_status, write, status, last_line, tmp_path):
    if shutil.which("bash") is None:
        pytest.skip("needs bash")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "laddu-dask").write_text(FAKE_COMMAND)
    (bin_dir / "laddu-dask").chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
           "SLURM_SUBMIT_DIR": str(tmp_path), "SLURM_JOB_ID": "7", "FAKE_STATUS": str(fake_status),
           "FAKE_WRITE": "1" if write else ""}
    proc = subprocess.run(["bash", str(EXAMPLES / "submit_fit.sbatch")], capture_output=True, text=True,
                          env=env, timeout=COMMAND_BOUND)
    assert proc.returncode == status
    assert (proc.stdout + proc.stderr).strip().splitlines()[-1] == last_line
    assert "valid fit" not in proc.stdout or write


@pytest.mark.timeout(300)
def test_a_taken_dashboard_port_is_said_on_stdout_not_warned_on_stderr(tmp_path, sample):
    """The dashboard's port held by another process (a second user on a login node):
    distributed listens on another port; the command says where on stdout, and its stderr
    stays the one error line of the failed submission (distributed's three-line warning
    is not passed on)."""
    import re
    import socket

    pytest.importorskip("dask_jobqueue")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "sbatch").write_text('#!/bin/sh\necho "sbatch: error: no partition" >&2\nexit 1\n')
    (bin_dir / "sbatch").chmod(0o755)
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        cluster = ("[cluster]\nkind = 'slurm'\ncores = 1\nmemory = '1GB'\nwait_timeout = 3600\n"
                   f"dashboard_address = '127.0.0.1:{port}'\n")
        config = write_config(tmp_path, sample, cluster)
        proc = laddu_dask("fit", str(config), cwd=tmp_path, timeout=COMMAND_BOUND,
                          env=command_env(PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}"))
    assert proc.returncode == 3, proc.stderr
    assert_one_error_line(proc.stderr, "laddu-dask fit", "submitting a worker job failed", "no partition")
    said = re.search(rf"dashboard: http://127\.0\.0\.1:(\d+)/status \(port {port} was in use\)", proc.stdout)
    assert said and int(said.group(1)) not in (0, port), proc.stdout
