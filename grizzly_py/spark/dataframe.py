"""The DataFrame that ``to_spark()`` returns: Spark's own, whose actions speak grizzly-py.

Its class is a subclass of the session's DataFrame class made here, whose actions (``collect``,
``show``, ``toArrow``, ``count``, ``df.write...``) each run as one action of the job
(``SparkJob.action``): a task that failed with grizzly-py's own error (``BadInputError``,
``AggregateOverflowError``, ...) raises that error on the driver, and ``df.grizzly.metrics()``
knows whether the last action read the whole output. DataFrames derived from it
(``df.filter(...)``) are Spark's plain ones.
"""

from __future__ import annotations

import functools

# actions that read the whole output, and those that may stop reading it early (a limit): Spark
# ends the tasks of the latter before they finish, and a task that does not finish sends no report
_WHOLE = ("collect", "count", "tail", "toPandas", "toArrow", "foreach", "foreachPartition")
_PART = ("show", "take", "head", "first", "isEmpty", "toLocalIterator")


def with_job(df, job):
    """``df`` as a grizzly-py DataFrame of ``job`` (``df.grizzly``)."""
    df.__class__ = _subclass(type(df))
    df.grizzly = job
    return df


@functools.cache
def _subclass(base: type) -> type:
    def action(name: str, whole: bool):
        method = getattr(base, name)

        @functools.wraps(method)
        def run(self, *args, **kwargs):
            with self.grizzly.action(name, whole):
                return method(self, *args, **kwargs)
        return run

    attrs = {name: action(name, name in _WHOLE) for name in _WHOLE + _PART if hasattr(base, name)}
    if isinstance(getattr(base, "write", None), property):
        attrs["write"] = property(lambda self: _Writer(base.write.__get__(self), self.grizzly))
    return type(f"Grizzly{base.__name__}", (base,), attrs)


class _Writer:
    """``df.write``: Spark's DataFrameWriter, whose calls run as actions of the job (its
    builder calls, ``mode(...)``/``option(...)``, return this wrapper again)."""

    def __init__(self, writer, job):
        self._writer, self._job = writer, job

    def __getattr__(self, name):
        value = getattr(self._writer, name)
        if not callable(value):
            return value

        @functools.wraps(value)
        def call(*args, **kwargs):
            with self._job.action(f"write.{name}", True):
                out = value(*args, **kwargs)
            return self if out is self._writer else out
        return call
