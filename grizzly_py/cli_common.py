"""What the ``grizzly`` commands share: the query of ``FILE[:NAME]``, a result as a table, and
errors as one line.

``cli.py`` (the commands) and ``spark/cli.py`` (``grizzly run --engine spark``) both use them;
they live here, below both, so that neither command module imports the other.
"""

from __future__ import annotations

import contextlib
import os
import runpy
import sys
import traceback
from functools import wraps

import click
from rich.console import Console
from rich.table import Table

from .environment import StreamEnvironment
from .stream import DataStream

console = Console()


def split_target(target: str) -> tuple[str, str]:
    """``FILE[:NAME]`` as (FILE, NAME): split at the last ``:`` when what follows is a Python
    identifier and the whole is not an existing file (a path may hold ``:``); NAME defaults to
    ``query``."""
    path, colon, name = target.rpartition(":")
    if colon and path and name.isidentifier() and not os.path.isfile(target):
        return path, name
    return target, "query"


@contextlib.contextmanager
def beside(path: str):
    """``path``'s folder first on the module search path while its query loads, as ``python
    FILE`` puts it there: a helper module beside the query file imports."""
    folder = os.path.dirname(os.path.abspath(path))
    sys.path.insert(0, folder)
    try:
        yield
    finally:
        if folder in sys.path:
            sys.path.remove(folder)


def load_query(target: str, parallelism=None, window_state=None) -> DataStream:
    """The stream ``NAME`` of ``FILE`` (a module-level stream, or a function taking an environment),
    with its environment configured by the given options (None: as the file set it). ``FILE`` runs
    as Python (trusted code), with its folder on the module search path."""
    path, name = split_target(target)
    if not os.path.isfile(path):
        raise click.UsageError(f"no such file: {path}")
    with beside(path):
        namespace = runpy.run_path(path, run_name="__grizzly__")
        if name not in namespace:
            raise click.UsageError(f"{path} defines no {name!r}: a run/explain file defines a stream named "
                                   f"{name!r}, or a function {name}(env) that takes a StreamEnvironment and "
                                   f"returns one")
        obj = namespace[name]
        if callable(obj) and not isinstance(obj, DataStream):
            obj = obj(StreamEnvironment())
    if not isinstance(obj, DataStream):
        raise click.UsageError(f"{path}:{name} is a {type(obj).__name__}, not a stream")
    try:
        obj.env.configure(parallelism=parallelism, window_state=window_state)
    except ValueError as e:
        raise click.UsageError(str(e)) from None
    return obj


def print_result(table, limit: int) -> None:
    """The first ``limit`` rows of a result table, as a rich table."""
    rt = Table(title=f"result: {table.num_rows} rows" + (f" (first {limit})" if table.num_rows > limit else ""))
    for name in table.column_names:
        rt.add_column(name, justify="right")
    for row in table.slice(0, limit).to_pylist():
        rt.add_row(*[str(v) for v in row.values()])
    console.print(rt)


def one_line_errors(command):
    """A command (taking ``target`` and ``debug``) whose errors print as one line, ``Error: FILE,
    line N: Type: message``, naming the query file's line that raised where there is one; with
    ``debug`` the full trace instead."""
    @wraps(command)
    def run(*args, **kwargs):
        if kwargs.get("debug"):
            return command(*args, **kwargs)
        try:
            return command(*args, **kwargs)
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except Exception as e:
            where = _query_line(e, split_target(kwargs["target"])[0])
            message = " ".join(str(e).split()) or "(no message)"
            raise click.ClickException(f"{where}{type(e).__name__}: {message} (--debug shows the full trace)") from None
    return run


def _query_line(error: BaseException, path: str) -> str:
    """``FILE, line N: `` of the innermost frame in the query file that the error passed, or ""."""
    path = os.path.abspath(path)
    frames = [f for f in traceback.extract_tb(error.__traceback__) if os.path.abspath(f.filename) == path]
    return f"{frames[-1].filename}, line {frames[-1].lineno}: " if frames else ""


def records_per_second(records: int, seconds: float) -> str:
    """A throughput with a unit that fits it: ``24.1 M records/s``, ``812.5 K records/s``,
    ``950 records/s``."""
    rate = records / seconds if seconds > 0 else float("inf")
    for scale, unit in ((1e9, "G "), (1e6, "M "), (1e3, "K ")):
        if rate >= scale and rate != float("inf"):
            return f"{rate / scale:,.1f} {unit}records/s"
    return f"{rate:,.0f} records/s"


def without_notes(metrics):
    """``metrics`` without the diagnostics that ``--verbose`` shows (``counter_notes``)."""
    if isinstance(metrics, dict):
        return {k: without_notes(v) for k, v in metrics.items() if k != "counter_notes"}
    if isinstance(metrics, list):
        return [without_notes(v) for v in metrics]
    return metrics
