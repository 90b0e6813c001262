"""What a job tells the parts that watch it: the ``JobObserver`` interface.

The driver (``local.run_job``) reads a job's sources in rounds (``source_loop.py``) and feeds each
round to its queries (``local.QueryRun``). What else a job may do at its boundaries is an
observer's, registered when it is configured: checkpoints (``checkpoint.Checkpointer``) and the
state-memory limit (``state_memory.StateMemoryLimit``). The driver asks each observer what it
needs of the job before the job starts, then tells each, in the order they were registered, what
happens; every hook does nothing by default. No task runs while an observer is told of a round's
end; the ``job`` it is given is the running ``local.Job`` (its queries ``runs``, its
``sources``, their ``reads`` and its ``loop``).
"""

from __future__ import annotations


class JobObserver:
    """Hooks at a job's boundaries (see the module docstring)."""

    # --- what it needs of the job, asked before the job starts ---------------------------------------
    #: whether the job's kernels keep one state layout throughout (no ``grouping``/``window_state``
    #: "auto" choosing while the job runs: what the observer reads is one kernel per pipeline)
    keeps_layout = False
    #: where the commit record of the job's file sinks goes (None: next to the first: ``commit.py``)
    commit_dir: str | None = None

    def sink_factory(self, query: int):
        """How query number ``query`` opens its sink, ``(spec, schema, unique key) -> Sink`` (None:
        the job opens the real sink, ``sinks.open_sink``)."""
        return None

    # --- what happens, as the job runs ---------------------------------------------------------------
    def on_start(self, job) -> None:
        """The job's queries are built and nothing is read yet; the observer may restore their
        state and have the sources resume where it says (``job.loop``)."""

    def before_source_end(self, job) -> None:
        """A source ended: a query is about to learn of it (its grouped batches have not run, its
        last windows have not fired)."""

    def on_round_end(self, job) -> None:
        """A round of source batches went through every query."""

    def before_publish(self, job) -> None:
        """Every query finished; the output of its file sinks is about to be published under
        the final names (raising stops it)."""

    def on_finish(self, job) -> None:
        """The job's output is published."""

    def close(self) -> None:
        """The job ends, finished or failed."""

    def add_metrics(self, metrics: dict) -> None:
        """Add what the observer reports to the job's ``metrics``."""


__all__ = ["JobObserver"]
