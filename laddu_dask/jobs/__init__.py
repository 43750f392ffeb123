"""Batch fits described by a TOML file: ``laddu-dask fit CONFIG.toml``.

A batch fit reads one TOML file that names the event samples, the model, the
likelihood terms, the start values, the minimiser settings, the execution settings
and (optionally) a Dask cluster; it runs the fit and writes the result as JSON.

Usage::

    laddu-dask fit CONFIG.toml [--scheduler ADDRESS] [--output result.json]
                               [--print-job-script] [--quiet] [--debug]

``--scheduler`` runs on an existing Dask scheduler (``tcp://host:8786``), overriding
``[cluster]``; ``--output`` chooses the result file (default ``<config stem>.result.json``
beside the config; a file the job reads, whatever its spelling or link, is refused, and so
is a module file (``.py``, ``.pyc``, ...) in the model file's folder or on the import path);
``--print-job-script`` prints the batch script that the ``[cluster]`` table would submit
for each worker job, submits nothing and exits; ``--debug`` prints the traceback of a
failure before its one-line message.

Exit status:

=== =====================================================================================
0   valid fit; the result is written
1   the fit is not valid (e.g. the minimiser did not converge); the result is still
    written, with ``"valid": false``
2   bad input: the config, a model file, the data, the start values or the command
    line (one line on stderr names the file, table, key or value at fault); nothing is
    written
3   the fit could not run: the cluster did not start, a job submission failed, the
    workers did not arrive within ``wait_timeout``, the kernel cache or the result file
    could not be written (a full disk), an evaluation failed during the minimisation
    (one line on stderr); nothing is written
130 interrupted (SIGINT, Ctrl-C), also while waiting for workers; nothing is written
=== =====================================================================================

A model file is Python code
---------------------------
A model given as ``{ file = "mymodel.py" }`` is imported and its function called with
the rights of the user who runs ``laddu-dask fit``: it can do anything that user can
(read, change or delete their files, start processes). Name only model files you would
run yourself, and treat a TOML file that names one as you would the script itself.
A model file that fails, or calls ``sys.exit``, while it is imported or while its
function runs is bad input (status 2).

TOML schema
-----------
Unknown keys are rejected in every table (naming the table, the key and the allowed
keys), so a typo never silently falls back to a default. Relative paths (data, model
files) are relative to the folder of the config file. In every string,
``${NAME}`` is replaced by the environment variable ``NAME`` (an error when it is not
set) and ``${NAME:-default}`` by its value or ``default``.

Top level

================ =============== ======== ============================================
key              type            default  meaning
================ =============== ======== ============================================
``description``  string          ``""``   free text, copied into the result
``model``        string or table none     the model of every term without its own
                                          (see *Models*)
``[models.N]``   table           none     named models, referred to as ``model = "N"``
``[data]``       table           none     the dataset named ``data``
``[accmc]``      table           none     the dataset named ``accmc``
``[[datasets]]`` array of tables none     more datasets, each with a ``name``
``[[terms]]``    array of tables one NLL  likelihood terms (see *Terms*)
``[start]``      table           none     ``parameter = value`` start values, or
                                          ``[minimum, maximum]`` starting ranges
``[fit]``        table           defaults minimiser settings
``[bins]``       table           none     a mass-independent fit instead of one fit
``[execution]``  table           defaults runtime settings
``[cluster]``    table           local    where to run
================ =============== ======== ============================================

Datasets (``[data]``, ``[accmc]``, each ``[[datasets]]`` entry)

================= ============================== ============= ========================================
key               type                           default       meaning
================= ============================== ============= ========================================
``name``          string                         (required)    only in ``[[datasets]]``; unique
``path``          string or list of strings      (required)    Parquet file, folder (its ``*.parquet``)
                                                               or glob, or a list of these
``format``        string                         by suffix     a registered format (``ld.io.formats()``:
                                                               ``"parquet"``, ``"root"``, a user's);
                                                               by default the path's suffix's, else
                                                               Parquet
``chunk_size``    integer > 0                    automatic     events per partition
``memory_policy`` ``"fastest"``, ``"resident"``, ``"fastest"`` keep prepared columns in memory, stream
                  ``"streaming"``                              them, or decide by the memory budget
================= ============================== ============= ========================================

Terms (each ``[[terms]]`` entry; without any, one NLL of ``data`` and ``accmc``)

=============== ============================= ============= ===============================
key             type                          default       meaning
=============== ============================= ============= ===============================
``name``        string                        its ``data``  unique term name
``kind``        ``"nll"``, ``"extended_nll"`` ``"nll"``     ``NLL`` or ``ExtendedNLL``
``data``        string                        ``"data"``    dataset name of the data
``accepted_mc`` string                        ``"accmc"``   dataset name of the accepted MC
``model``       string or table               top ``model`` this term's model
=============== ============================= ============= ===============================

Models: a string names a ``[models.N]`` table or a built-in model (``"ksks"``); a table
is one of

* ``{ builtin = "ksks", lineshape = "bw" | "rbw", fixed_lineshapes = false }``: the
  KsKs S+D-wave intensity of :func:`laddu_dask.datasets.ksks.model` (defaults ``"bw"``,
  ``false``);
* ``{ file = "mymodel.py", function = "build", options = { ... } }``: the function
  ``function`` (default ``"build"``) of the Python file ``file``, called with the
  keyword arguments ``options`` (default none); it returns a :class:`~laddu_dask.Model`
  or an expression. The file's folder is on ``sys.path`` while it is imported. It runs
  with your rights (see *A model file is Python code* above).

``[start]``: ``name = number`` for any free parameter of the model(s); the others start
at their initial values. ``name = [minimum, maximum]`` gives the parameter a starting range
instead (as ``parameter(name, initial=(minimum, maximum))``): the first fit starts at its
middle, and ``[fit] restarts`` sample their starts in it. A name that is not a free
parameter, or a value or range outside the parameter's bounds, is an error. Restarts of
parameters without any starting range all start at one point: the job warns, and the
result's ``"restarts"`` carries that ``"message"``.

``[fit]``

============= ========================== ============ ================================
key           type                       default      meaning
============= ========================== ============ ================================
``method``    ``"migrad"``, ``"lbfgsb"`` ``"migrad"`` iminuit MIGRAD then HESSE, or
                                                      laddu's default L-BFGS-B, 2 H^-1
``tolerance`` number > 0                 ``0.1``      MIGRAD's EDM tolerance
``strategy``  0, 1 or 2                  ``1``        MIGRAD's strategy
``max_calls`` integer > 0                none         limit on likelihood evaluations
``restarts``  integer > 0                ``1``        fits from ``[start]`` and then from
                                                      starts sampled from the parameters'
                                                      initialization ranges; the best
                                                      valid one is the result
``seed``      integer >= 0               ``0``        seed of the sampled starts and of
                                                      the bootstrap replicas
``bootstrap`` integer >= 0               ``0``        Poisson-bootstrap refits of the data
                                                      from the result; their spread is
                                                      ``"bootstrap"`` in the result
============= ========================== ============ ================================

``[bins]`` (one term only): every bin is fitted ``[fit] restarts`` times from its own seeded
starts (:func:`laddu_dask.fit_bins`); the result has a ``"bins"`` list (each bin's edges,
validity, best ``fval``, values, errors, events and restarts) and is valid when every bin
has a valid fit

========== ================ ========== ==================================================
key        type             default    meaning
========== ================ ========== ==================================================
``scalar`` string           none       bin a scalar column, or
``mass``   list of strings  none       the invariant mass of the sum of these four-vectors
``edges``  list of numbers  none       the bin edges, or
``count``  integer > 0      none       ``count`` equal bins from ``low`` to ``high``
``low``    number           none
``high``   number           none
========== ================ ========== ==================================================

``[execution]`` (see :class:`~laddu_dask.Execution`)

================= ==================================== ========== ====================================
key               type                                 default    meaning
================= ==================================== ========== ====================================
``device``        ``"cpu"``, ``"gpu"``, ``"auto"``     ``"cpu"``  where kernels run
``precision``     ``"f64"``, ``"f32"``                 ``"f64"``  kernel precision
``memory``        string or integer                    unlimited  host budget (``"4 GiB"``, ``"60%"``,
                                                                  bytes), per worker on a cluster
``device_memory`` string or integer                    unlimited  device budget
``kernel``        ``"auto"``, ``"fused"``, ``"numpy"`` ``"auto"`` per-partition kernels
``normalization`` ``"auto"``, ``"general"``,           ``"auto"`` how accepted-MC sums are computed
                  ``"verify"``
``split_every``   integer >= 2                         ``8``      tree-reduction fan-in
``num_workers``   integer > 0                          CPUs       threads of the local scheduler
================= ==================================== ========== ====================================

``[cluster]``: without it, the local threaded scheduler. Give at most one of
``scheduler``, ``scheduler_file`` and ``kind``.

==================== ====================== ======== ======================================
key                  type                   default  meaning
==================== ====================== ======== ======================================
``scheduler``        string                 none     address of a running Dask scheduler
                                                     (``tcp://host:8786``)
``scheduler_file``   string                 none     its scheduler file (e.g. dask-mpi)
``kind``             ``"slurm"``, ``"pbs"`` none     start the workers as batch jobs
                                                     (needs ``dask-jobqueue``)
``jobs``             integer > 0            ``1``    worker jobs to submit (with ``kind``)
``wait_for_workers`` integer >= 0           ``1``    workers to wait for before preparing
                                                     the data (how many have arrived is
                                                     printed every 5 s)
``wait_timeout``     number > 0             ``3600`` seconds to wait for them (then exit 3)
==================== ====================== ======== ======================================

With ``kind``, laddu-dask starts the Dask scheduler in its own process, and these keys
say how it may be reached (the defaults never listen on every interface):

========================= ======= ==================== ==============================================
key                       type    default              meaning
========================= ======= ==================== ==============================================
``scheduler_host``        string  see meaning          the address the scheduler listens on (one
                                                       interface); default: the address of
                                                       ``interface`` when that is given, else this
                                                       machine's address on its default route (the
                                                       one dask-jobqueue tells the workers)
``scheduler_interface``   string  none                 or a network interface name (``"ib0"``)
``dashboard_address``     string  ``"127.0.0.1:8787"`` where the dashboard listens (reach it with
                                                       ``ssh -L 8787:localhost:8787``);
                                                       ``":8787"`` is every interface
``tls``                   boolean ``true``             encrypt and authenticate every connection of
                                                       the scheduler, workers and client with TLS
                                                       (Dask's ``Security``); ``false`` is plain TCP
                                                       that anyone reaching the node can use to run
                                                       code as you
``tls_ca_file``,          string  none                 your own CA, certificate and private key (all
``tls_cert``, ``tls_key``                              three, readable on the compute nodes);
                                                       without them the certificates are temporary
                                                       (``Security.temporary()``, needs
                                                       ``cryptography``)
``shared_temp_directory`` string  the current folder   where temporary certificates are written for
                                                       the worker jobs (a private folder, removed
                                                       when the fit ends; it must be readable on the
                                                       compute nodes: a shared file system)
========================= ======= ==================== ==============================================

The certificate paths in a ``--print-job-script`` script are temporary: they exist only
while the fit that submits the jobs runs.

These keys are passed to ``dask_jobqueue.SLURMCluster`` or
``PBSCluster``: ``cores`` (integer), ``memory`` (string, per job), ``processes``
(integer), ``walltime``, ``queue``, ``account``, ``project``, ``job_name``,
``interface``, ``local_directory``, ``log_directory``, ``python``, ``shebang``
(strings), ``death_timeout`` (number), ``job_extra_directives``,
``job_directives_skip``, ``job_script_prologue``, ``worker_extra_args`` (lists of
strings), ``scheduler_options`` (table), and for SLURM ``job_cpu`` (integer) and
``job_mem`` (string), for PBS ``resource_spec`` (string). Any other keyword argument of
those classes goes, unchecked, in the table ``[cluster.jobqueue_options]``. The
scheduler's ``host``, ``interface``, ``dashboard_address``, ``security`` and
``protocol`` are set only by the keys above, not in ``scheduler_options`` or
``jobqueue_options``. The submit command (``sbatch``, ``qsub``) must be on ``PATH``, and
a failed submission ends the fit at once (exit 3).

Result file (JSON; non-finite numbers are written as ``null``): ``valid`` (MIGRAD or
L-BFGS-B converged and HESSE's covariance is accurate, not forced positive-definite),
``fval``, ``edm``, ``n_calls``, ``method``, ``message`` (plain text), ``parameter_names``,
``values``, ``errors``, ``covariance`` and ``correlation`` (each
``{"parameters": [...], "matrix": [[...]]}`` or ``null``), ``start``,
``terms``, ``execution``, ``memory_decisions``, ``timings`` (seconds: ``read``,
``cluster``, ``prepare``, ``fit``, ``wall``), ``versions``, ``config`` (absolute path),
``config_sha256`` (of the file's bytes), ``description`` and ``created`` (UTC).
It is written to a temporary file in the same folder and moved into place.

Examples
--------
>>> import os, tempfile
>>> from laddu_dask import ksks
>>> from laddu_dask.jobs import load_config, main
>>> folder = tempfile.mkdtemp()
>>> paths = ksks.write_sample(folder, n_data=500, n_mc=2000, seed=3)
>>> config = os.path.join(folder, "fit.toml")
>>> with open(config, "w") as f:
...     _ = f.write('model = { builtin = "ksks", fixed_lineshapes = true }\\n'
...                 '[data]\\npath = "data.parquet"\\n[accmc]\\npath = "accmc.parquet"\\n')
>>> load_config(config).terms[0].kind
'nll'
>>> main([config, "--quiet"])
0
>>> os.path.exists(os.path.join(folder, "fit.result.json"))
True
"""

from __future__ import annotations

from laddu_dask.jobs.cluster import job_script
from laddu_dask.jobs.command import build_parser, main
from laddu_dask.jobs.config import load_config
from laddu_dask.jobs.run import run_fit
from laddu_dask.jobs.schema import (
    ClusterSettings,
    ConfigError,
    DatasetSpec,
    ExecutionSettings,
    FitConfig,
    FitRunError,
    FitSettings,
    ModelSpec,
    TermSpec,
)

__all__ = [
    "ClusterSettings",
    "ConfigError",
    "DatasetSpec",
    "ExecutionSettings",
    "FitConfig",
    "FitRunError",
    "FitSettings",
    "ModelSpec",
    "TermSpec",
    "build_parser",
    "job_script",
    "load_config",
    "main",
    "run_fit",
]
