"""What the ``grizzly`` commands share: the query of ``FILE[:NAME]`` and a result as a table.

``cli.py`` (the commands) and ``spark/cli.py`` (``grizzly run --engine spark``) both use them;
they live here, below both, so that neither command module imports the other.
"""

from __future__ import annotations

import os
import runpy

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


def load_query(target: str, parallelism=None, window_state=None) -> DataStream:
    """The stream ``NAME`` of ``FILE`` (a module-level stream, or a function taking an environment),
    with its environment configured by the given options (None: as the file set it). ``FILE`` runs
    as Python (trusted code)."""
    path, name = split_target(target)
    try:
        namespace = runpy.run_path(path, run_name="__grizzly__")
    except FileNotFoundError:
        raise click.UsageError(f"no such file: {path}") from None
    if name not in namespace:
        raise click.UsageError(f"{path} defines no {name!r} (a stream, or a function taking a StreamEnvironment)")
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
