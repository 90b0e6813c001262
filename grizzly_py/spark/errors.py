"""grizzly-py's own errors out of failed Spark tasks.

A task that raises, say, ``BadInputError`` fails its Spark job, and PySpark hands the driver a
``PythonException`` whose text holds the task's Python traceback. ``task_error`` finds
grizzly-py's exception in that text and rebuilds it, so that the driver raises the same type with
the task's message (``execute()``, and the actions of a ``to_spark()`` DataFrame).
"""

from __future__ import annotations

import re

from ..aggregates import AggregateOverflowError
from ..sources import BadInputError
from ..types import SchemaError

# the errors a Spark task re-raises as themselves, by the qualified name a traceback prints
_TASK_ERRORS = {f"{e.__module__}.{e.__qualname__}": e for e in (BadInputError, AggregateOverflowError, SchemaError)}


def task_error(e: BaseException) -> BaseException | None:
    """The grizzly-py error a Spark task failed with, as that exception type; None if none."""
    for m in re.finditer(r"(grizzly_py\.[\w.]+Error): (.+)", str(e)):
        if m.group(1) in _TASK_ERRORS:
            return _TASK_ERRORS[m.group(1)](m.group(2).strip())
    return None
