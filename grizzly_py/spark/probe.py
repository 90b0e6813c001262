"""Whether Spark's Python workers can run grizzly-py, checked before a session's first job.

A session built in a virtualenv with ``SparkSession.builder.master(...)`` runs its Python workers
with ``PYSPARK_PYTHON`` (else ``python3`` from the PATH), not with the driver's interpreter
(``spark.pyspark.python`` set on the builder is read only by ``spark-submit``), so a worker may
lack grizzly-py or its dependencies, or hold another version of it. Without a check, the first
action fails with pages of Java and Python traces ending in ``No module named 'pyarrow'``.

``check_workers`` runs one tiny probe job that imports in a worker what the tasks import, and
reports the worker's interpreter and grizzly-py version; the answer is cached per application
and worker interpreter, so the probe runs once per session. Where the workers cannot run
grizzly-py at the driver's version:

- a local master whose workers run another interpreter than the driver: the session's workers
  are switched to the driver's interpreter (they run on this machine) and a
  ``SparkWorkersWarning`` says so;
- otherwise ``SparkWorkersError``, one line that names the interpreter, the reason and the fix.
"""

from __future__ import annotations

import os
import re
import sys
import warnings
from dataclasses import dataclass

from .. import version
from ..codegen.generated import CODEGEN_VERSION

_CHECKED: set[tuple[str, str]] = set()  # (application id, worker interpreter) that passed


class SparkWorkersError(RuntimeError):
    """Spark's Python workers cannot run grizzly-py (the message says why and how to fix it)."""


class SparkWorkersWarning(UserWarning):
    """A local session's Python workers were switched to the driver's interpreter."""


@dataclass(frozen=True)
class WorkerPython:
    """What the probe found in a worker: its interpreter, grizzly-py's version and code generator
    version there, or why grizzly-py does not import (``error``)."""

    executable: str
    version: str | None = None
    codegen: int | None = None
    error: str | None = None

    def mismatch(self) -> str | None:
        """Why this worker cannot run the driver's plans (None: it can)."""
        if self.error is not None:
            return f"cannot import grizzly-py: {self.error}"
        if (self.version, self.codegen) != (version.__version__, CODEGEN_VERSION):
            return (f"cannot run the driver's plans: grizzly-py {self.version} (codegen v{self.codegen}) there, "
                    f"{version.__version__} (codegen v{CODEGEN_VERSION}) in the driver")
        return None


def check_workers(spark) -> None:
    """Check, once per session and worker interpreter, that ``spark``'s Python workers run
    grizzly-py at the driver's version; fix a local session or raise ``SparkWorkersError``."""
    sc = getattr(spark, "sparkContext", spark)
    key = (sc.applicationId, sc.pythonExec)
    if key in _CHECKED:
        return
    found = probe(sc)
    problem = found.mismatch()
    if problem is not None and sc.master.startswith("local") and not _same_path(found.executable, sys.executable):
        previous, sc.pythonExec = sc.pythonExec, sys.executable
        if probe(sc).mismatch() is None:
            warnings.warn(SparkWorkersWarning(
                f"Spark's Python workers ran {found.executable}, which {problem}; this local session's workers "
                f"now run the driver's interpreter {sys.executable} (to choose another, set PYSPARK_PYTHON "
                f"before the session starts)"), stacklevel=3)
            _CHECKED.add((sc.applicationId, sc.pythonExec))
            return
        sc.pythonExec = previous
    if problem is not None:
        raise SparkWorkersError(_fix(found, problem))
    _CHECKED.add(key)


def _fix(found: WorkerPython, problem: str) -> str:
    v = version.__version__
    return (f"Spark's Python workers ({found.executable}) {problem}. Run them with an interpreter that has "
            f"grizzly-py {v}: set PYSPARK_PYTHON={sys.executable} before the session starts "
            f"(spark-submit: --conf spark.pyspark.python=...), or install grizzly-py {v} for "
            f"{found.executable}, or ship an environment that has it with spark.archives (a packed "
            f"virtualenv; spark.submit.pyFiles ships grizzly-py itself where its dependencies, numpy, "
            f"pyarrow and llvmlite, are installed)")


def probe(sc) -> WorkerPython:
    """Run the probe job: one task that imports, in a Python worker, what grizzly-py's tasks
    import. A worker that cannot even start (no such interpreter, another Python version than
    the driver's) fails the job; its reason is read from Spark's error."""

    def probe_task(_):  # a local function: pickled by value, so unpickling imports nothing
        import sys
        try:
            import grizzly_py.spark.worker  # noqa: F401  (what the tasks run)
            from grizzly_py.codegen.generated import CODEGEN_VERSION
            from grizzly_py.version import __version__
            return [(sys.executable, __version__, CODEGEN_VERSION, None)]
        except Exception as e:
            return [(sys.executable, None, None, f"{type(e).__name__}: {e}")]

    try:
        executable, version, codegen, error = sc.parallelize([0], 1).mapPartitions(probe_task).collect()[0]
    except Exception as e:  # a Py4J or PySpark error from the JVM
        return WorkerPython(sc.pythonExec, error=_reason(e))
    return WorkerPython(executable, version, codegen, error)


def _reason(e: BaseException) -> str:
    """The last ``SomeError: message`` line of a Spark job's failure, else its first line."""
    lines = [line.strip() for line in str(e).splitlines() if line.strip()]
    found = [line for line in lines if re.match(r"^[\w.$]+(Error|Exception): ", line)]
    text = found[-1] if found else (lines[0] if lines else type(e).__name__)
    return text if len(text) <= 300 else text[:297] + "..."


def _same_path(a: str, b: str) -> bool:
    """The same interpreter path (symlinks not followed: a virtualenv's python links to its base
    interpreter, yet runs with the virtualenv's packages)."""
    return os.path.normcase(os.path.abspath(a)) == os.path.normcase(os.path.abspath(b))
